package main

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// storeURL is a --store URL split into its parts, before any scheme gives
// them a meaning:
//
//	scheme://[user[:password]@]host[:port][,host[:port]...][/path][?query]
//
// The userinfo ends at the last "@" not in a query parameter's value (see
// userinfoAt), so a password may hold "@", ":" or "/"; it may not hold "?"
// (write %3F: a URL with one is refused) and a literal "%" must be written
// %25. Host lists are comma-separated.
type storeURL struct {
	raw     string // as given: may hold a password, never print it
	display string // with the password replaced: safe to print

	scheme      string
	user        string
	password    string
	hasPassword bool
	hosts       []string // as written
	path        string   // after the hosts, without the leading "/"
	query       url.Values
}

// urlError says what is wrong with a store URL. It is a usage error.
type urlError struct {
	display string // the redacted URL
	part    string // "scheme", "host", "port", "database", "query parameter prefix"...
	msg     string
}

func (e *urlError) Error() string {
	return fmt.Sprintf("store %s: %s: %s", e.display, e.part, e.msg)
}

// parseStoreURL splits raw into its parts. It checks the syntax every
// scheme shares; the scheme's parser checks the rest.
func parseStoreURL(raw string) (*storeURL, error) {
	u := &storeURL{raw: raw, display: redact(raw)}
	bad := func(part, format string, args ...any) error {
		return &urlError{display: u.display, part: part, msg: fmt.Sprintf(format, args...)}
	}
	i := strings.Index(raw, "://")
	if i <= 0 {
		return nil, bad("scheme", "not a store URL: want SCHEME://..., such as redis://host:6379, memcache://host:11211 or memory://")
	}
	u.scheme = strings.ToLower(raw[:i])
	rest := raw[i+3:]
	userinfo, hasUserinfo := "", false
	if at := userinfoAt(rest); at >= 0 {
		if strings.IndexByte(rest[:at], '?') >= 0 {
			return nil, bad("password", "holds an unescaped ?: write ? in a password as %%3F")
		}
		userinfo, rest, hasUserinfo = rest[:at], rest[at+1:], true
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		u.query = url.Values{}
		for _, pair := range strings.Split(rest[q+1:], "&") {
			if pair == "" {
				continue
			}
			k, v, _ := strings.Cut(pair, "=")
			name, err := url.PathUnescape(k)
			if err != nil || name == "" {
				return nil, bad("query", "%q is not NAME=VALUE", redactParam(pair))
			}
			value, err := url.PathUnescape(v)
			if err != nil {
				return nil, bad("query parameter "+name, "bad %%-escape (write %%25 for a literal %%)")
			}
			u.query[name] = append(u.query[name], value)
		}
		rest = rest[:q]
	}
	if hasUserinfo {
		user, pass, hasPass := strings.Cut(userinfo, ":")
		var err error
		if u.user, err = url.PathUnescape(user); err != nil {
			return nil, bad("user name", "bad %%-escape (write %%25 for a literal %%)")
		}
		if u.password, err = url.PathUnescape(pass); err != nil {
			return nil, bad("password", "bad %%-escape (write %%25 for a literal %%)")
		}
		u.hasPassword = hasPass
	}
	hosts, path, _ := strings.Cut(rest, "/")
	if strings.Contains(path, "://") || (strings.ContainsAny(hosts, " \t\n") && strings.Contains(raw[i+3:], "://")) {
		return nil, bad("host", "another URL follows: give one URL per --store, and repeat --store for several stores")
	}
	u.path = path
	if hosts != "" {
		u.hosts = strings.Split(hosts, ",")
		for _, h := range u.hosts {
			if strings.TrimSpace(h) == "" {
				return nil, bad("host", "empty entry in the host list %q", hosts)
			}
		}
	}
	return u, nil
}

// userinfoAt returns the index in rest, a URL after its "://", of the "@"
// that ends the userinfo, or -1 when there is none. It is the last "@"
// that is not in a query parameter's value; an "@" after a "?" is in a
// value when the "=" of its NAME=VALUE pair comes before it, as names hold
// no "@". It is found before the query is split off, so that a "?" in a
// password does not pass for the start of the query.
func userinfoAt(rest string) int {
	at, inQuery, inValue := -1, false, false
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '?':
			inQuery, inValue = true, false
		case '&':
			inValue = false
		case '=':
			inValue = inQuery
		case '@':
			if !inValue {
				at = i
			}
		}
	}
	return at
}

// redact returns raw with its password, and the values of query parameters
// whose names hold "password", replaced by "xxxxx"; a userinfo holding a
// "?" is replaced whole, as where its password starts is unclear. It works
// on malformed URLs too, as it is what error messages show.
func redact(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		if strings.ContainsAny(raw, "@:") {
			return "(unparsable URL, not shown as it may hold a password)"
		}
		return raw
	}
	head, rest := raw[:i+3], raw[i+3:]
	if at := userinfoAt(rest); at >= 0 {
		userinfo := rest[:at]
		if user, _, ok := strings.Cut(userinfo, ":"); ok {
			userinfo = user + ":xxxxx"
		}
		if strings.IndexByte(rest[:at], '?') >= 0 {
			userinfo = "xxxxx"
		}
		head, rest = head+userinfo+"@", rest[at+1:]
	}
	query := ""
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		rest, query = rest[:q], rest[q:]
	}
	if query != "" {
		pairs := strings.Split(query[1:], "&")
		for k, p := range pairs {
			pairs[k] = redactParam(p)
		}
		query = "?" + strings.Join(pairs, "&")
	}
	return head + rest + query
}

// redactParam hides the value of a NAME=VALUE pair whose name mentions a
// password.
func redactParam(pair string) string {
	name, _, ok := strings.Cut(pair, "=")
	if ok && strings.Contains(strings.ToLower(name), "password") {
		return name + "=xxxxx"
	}
	return pair
}

// bad returns a urlError about part of u.
func (u *storeURL) bad(part, format string, args ...any) error {
	return &urlError{display: u.display, part: part, msg: fmt.Sprintf(format, args...)}
}

// hostPort validates one entry of the host list and returns it as
// host:port, with defaultPort when it has none.
func (u *storeURL) hostPort(h string, defaultPort int) (string, error) {
	host, port := h, ""
	switch {
	case strings.HasPrefix(h, "["):
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", u.bad("host", "%q: missing ] after an IPv6 address", h)
		}
		host = h[1:end]
		switch after := h[end+1:]; {
		case after == "":
		case strings.HasPrefix(after, ":"):
			port = after[1:]
		default:
			return "", u.bad("host", "%q: unexpected %q after ]", h, after)
		}
		if net.ParseIP(host) == nil {
			return "", u.bad("host", "%q is not an IPv6 address", host)
		}
	case strings.Count(h, ":") > 1:
		return "", u.bad("host", "%q: put an IPv6 address in brackets, as in [::1]:6379", h)
	case strings.Contains(h, ":"):
		host, port, _ = strings.Cut(h, ":")
	}
	if host == "" {
		return "", u.bad("host", "%q has no host name", h)
	}
	for _, c := range host {
		if !(c == '.' || c == '-' || c == '_' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", u.bad("host", "%q: %q cannot be part of a host name", host, c)
		}
	}
	p := defaultPort
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", u.bad("port", "%q in %q: want a number from 1 to 65535", port, h)
		}
		p = n
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// addrs validates the host list: between min and max entries (max 0: no
// limit), each given its default port.
func (u *storeURL) addrs(defaultPort, minHosts, maxHosts int, tooMany string) ([]string, error) {
	switch {
	case len(u.hosts) < minHosts:
		return nil, u.bad("host", "missing: want %s://HOST[:PORT]", u.scheme)
	case maxHosts > 0 && len(u.hosts) > maxHosts:
		return nil, u.bad("host", "%d hosts given: %s", len(u.hosts), tooMany)
	}
	out := make([]string, len(u.hosts))
	for i, h := range u.hosts {
		a, err := u.hostPort(strings.TrimSpace(h), defaultPort)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// checkParams refuses query parameters not in known, and parameters given
// twice.
func (u *storeURL) checkParams(known ...string) error {
	names := make([]string, 0, len(u.query))
	for name := range u.query {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(known, name) {
			if len(known) == 0 {
				return u.bad("query parameter "+name, "unknown: %s:// URLs take no parameters", u.scheme)
			}
			return u.bad("query parameter "+name, "unknown: %s:// URLs take %s", u.scheme, strings.Join(known, ", "))
		}
		if len(u.query[name]) > 1 {
			return u.bad("query parameter "+name, "given %d times", len(u.query[name]))
		}
	}
	return nil
}

// param returns the value of a query parameter and whether it was given.
func (u *storeURL) param(name string) (string, bool) {
	v, ok := u.query[name]
	if !ok {
		return "", false
	}
	return v[0], true
}

// durationParam reads a positive duration parameter.
func (u *storeURL) durationParam(name string, def time.Duration) (time.Duration, error) {
	v, ok := u.param(name)
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, u.bad("query parameter "+name, "%q: want a positive duration such as 500ms or 5s", v)
	}
	return d, nil
}

// intParam reads a non-negative integer parameter.
func (u *storeURL) intParam(name string, def int) (int, error) {
	v, ok := u.param(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, u.bad("query parameter "+name, "%q: want a whole number >= 0", v)
	}
	return n, nil
}

// boolParam reads a boolean parameter ("" counts as true: ?insecure).
func (u *storeURL) boolParam(name string) (bool, error) {
	v, ok := u.param(name)
	if !ok {
		return false, nil
	}
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, u.bad("query parameter "+name, "%q: want true or false", v)
	}
	return b, nil
}

// noUser refuses a user name or password where the scheme takes none.
func (u *storeURL) noUser() error {
	if u.user != "" || u.hasPassword {
		return u.bad("user", "%s:// URLs take no user name or password", u.scheme)
	}
	return nil
}

// name returns the store's name in lockctl's messages and output: the
// name parameter when given and not empty, or else the URL with its
// password hidden.
func (u *storeURL) name() string {
	if n, ok := u.param("name"); ok && n != "" {
		return n
	}
	return u.display
}
