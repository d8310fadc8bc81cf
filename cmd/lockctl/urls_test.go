package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseStoreURLs(t *testing.T) {
	for _, tc := range []struct {
		url, kind, display string
	}{
		{"redis://localhost", "redis", "redis://localhost"},
		{"redis://127.0.0.1:6380/2", "redis", "redis://127.0.0.1:6380/2"},
		{"redis://user:p@ss:w/rd@[::1]:6379/0?prefix=app:", "redis", "redis://user:xxxxx@[::1]:6379/0?prefix=app:"},
		{"rediss://:secret@redis.example.com:6380?insecure=true&server_name=x", "redis", "rediss://:xxxxx@redis.example.com:6380?insecure=true&server_name=x"},
		{"redis+cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3", "redis", "redis+cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3"},
		{"redis+sentinel://a:26379,b/mymaster/3?sentinel_password=s3cret", "redis", "redis+sentinel://a:26379,b/mymaster/3?sentinel_password=xxxxx"},
		{"REDIS://h", "redis", "REDIS://h"},
		{"memcache://mc:11211?prefix=locks:&timeout=1s", "memcache", "memcache://mc:11211?prefix=locks:&timeout=1s"},
		{"memcache://mc", "memcache", "memcache://mc"},
		{"memory://", "memory", "memory://"},
		{"memory://demo", "memory", "memory://demo"},
		// The forms of rueidis URLs that mean what lockctl's do.
		{"valkey://:pw@h:6380/1", "redis", "valkey://:xxxxx@h:6380/1"},
		{"valkeys://h?skip_verify=true", "redis", "valkeys://h?skip_verify=true"},
		{"valkey+cluster://a:7000,b:7000", "redis", "valkey+cluster://a:7000,b:7000"},
		{"valkeys+sentinel://a/m", "redis", "valkeys+sentinel://a/m"},
		{"unix:///run/redis/redis.sock?db=2", "redis", "unix:///run/redis/redis.sock?db=2"},
		{"unix://:pw@/tmp/r.sock", "redis", "unix://:xxxxx@/tmp/r.sock"},
		{"redis://h?db=3&write_timeout=2s&client_cache=0&max_retries=0", "redis", "redis://h?db=3&write_timeout=2s&client_cache=0&max_retries=0"},
		{"redis://h/3?db=3", "redis", "redis://h/3?db=3"},
		{"redis+sentinel://a/m?db=4", "redis", "redis+sentinel://a/m?db=4"},
	} {
		spec, err := parseStore(tc.url)
		if err != nil {
			t.Errorf("parseStore(%q) = %v", tc.url, err)
			continue
		}
		if spec.kind != tc.kind || spec.display != tc.display {
			t.Errorf("parseStore(%q) = kind %q, display %q; want %q, %q", tc.url, spec.kind, spec.display, tc.kind, tc.display)
		}
	}
}

// Each malformed URL is refused with an error naming the part that is
// wrong, and never showing a password.
func TestParseStoreURLErrors(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want []string // substrings of the error
	}{
		{"localhost:6379", []string{"scheme", "SCHEME://"}},
		{"://h", []string{"scheme"}},
		{"mysql://h", []string{"scheme", `"mysql"`, "redis", "memcache", "postgres"}},
		{"redis://", []string{"host", "missing"}},
		{"redis://:6379", []string{"host", "no host name"}},
		{"redis://h:port", []string{"port", `"port"`, "1 to 65535"}},
		{"redis://a redis://b", []string{"another URL follows", "repeat --store"}},
		// The example of a database number is one the scheme takes.
		{"unix:///tmp/r.sock?db=x", []string{"database", `"x"`, "unix:///path/to/redis.sock?db=0"}},
		{"redis+sentinel://a/m/x", []string{"database", `"x"`, "redis+sentinel://host:26379/MASTER/0"}},
		{"memcache://h1 memcache://h2", []string{"another URL follows", "repeat --store"}},
		{"redis://h:0", []string{"port", "1 to 65535"}},
		{"redis://h:70000", []string{"port"}},
		{"redis://::1:6379", []string{"host", "brackets"}},
		{"redis://[::1:6379", []string{"host", "]"}},
		{"redis://h o/", []string{"host", `' '`}},
		{"redis://h/x", []string{"database", `"x"`}},
		{"redis://h/-1", []string{"database"}},
		{"redis://a,b", []string{"host", "2 hosts", "redis+cluster", "repeat --store"}},
		{"redis://a,,b", []string{"host", "empty entry"}},
		{"redis://h?prefx=a", []string{"query parameter prefx", "unknown", "prefix"}},
		{"redis://h?prefix=a&prefix=b", []string{"query parameter prefix", "given 2 times"}},
		{"redis://h?prefix={a}", []string{"query parameter prefix", "{ or }"}},
		{"redis://h?dial_timeout=soon", []string{"query parameter dial_timeout", `"soon"`}},
		{"redis://h?wait_replicas=x", []string{"query parameter wait_replicas"}},
		{"redis://h?wait_timeout=1s", []string{"query parameter wait_timeout", "wait_replicas"}},
		{"redis://h?ca=/x.pem", []string{"query parameter ca", "rediss://"}},
		{"rediss://h?ca=/nonexistent/ca.pem", []string{"query parameter ca", "no such file"}},
		{"rediss://h?cert=/x.pem", []string{"cert and key", "both"}},
		{"rediss://h?insecure=maybe", []string{"query parameter insecure", "true or false"}},
		{"redis://h?a%zz=1", []string{"query"}},
		{"redis://u:pa%zzss@h", []string{"password", "%25"}},
		{"redis+cluster://a,b/1", []string{"database", "only database 0"}},
		{"redis+sentinel://a:26379", []string{"master name", "missing"}},
		{"redis+sentinel://a/m/x", []string{"database"}},
		{"memcache://a,b", []string{"host", "one memcache:// URL is one server", "repeat --store"}},
		{"memcache://h/x", []string{"path"}},
		{"memcache://u:secret@h", []string{"user"}},
		{"memcache://h?timeout=-1s", []string{"query parameter timeout"}},
		{"memcache://h?prefix=has%20space", []string{"query parameter prefix", "space"}},
		{"memcache://h?max_idle=0", []string{"query parameter max_idle", "at least 1"}},
		{"memory://a/b", []string{"name"}},
		// The forms of rueidis URLs that lockctl writes otherwise.
		{"redis://a?addr=b:6379", []string{"query parameter addr", "redis+cluster://HOST1:PORT,HOST2:PORT", "redis+sentinel://", "repeat --store"}},
		{"valkey://a?addr=b", []string{"query parameter addr", "valkey+cluster://"}},
		{"redis://a?master_set=mymaster", []string{"query parameter master_set", "redis+sentinel://SENTINEL:26379[,SENTINEL2:26379]/mymaster"}},
		{"redis://a?protocol=2", []string{"query parameter protocol", "drop it"}},
		{"redis://a?client_cache=1", []string{"query parameter client_cache", "client_cache=0"}},
		{"redis://a?max_retries=3", []string{"query parameter max_retries", "max_retries=0"}},
		{"redis://a/1?db=2", []string{"query parameter db", `"2"`, `"1"`}},
		{"redis://a?db=x", []string{"database", `"x"`}},
		{"redis+cluster://a?db=1", []string{"query parameter db", "only database 0"}},
		{"redis://a?skip_verify", []string{"query parameter skip_verify", "rediss://"}},
		{"valkey+cluster://a?ca=x.pem", []string{"query parameter ca", "valkeys+cluster://"}},
		{"valkeys://a?skip_verify&insecure", []string{"skip_verify", "not both"}},
		{"redis://a?write_timeout=0s", []string{"query parameter write_timeout", "positive duration"}},
		{"unix://tmp/redis.sock", []string{"socket", "unix:///PATH/TO/redis.sock"}},
		{"unix://", []string{"socket"}},
		{"memory://?x=1", []string{"query parameter x", "no parameters"}},
	} {
		_, err := parseStore(tc.url)
		var ue *urlError
		if !errors.As(err, &ue) {
			t.Errorf("parseStore(%q) = %v; want a *urlError", tc.url, err)
			continue
		}
		msg := err.Error()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("parseStore(%q) = %q; want it to mention %q", tc.url, msg, w)
			}
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:hunter2@h:1/0":                 "redis://u:xxxxx@h:1/0",
		"redis://:hunter2@h":                      "redis://:xxxxx@h",
		"redis://u:hun@ter/2@h":                   "redis://u:xxxxx@h",
		"redis://u@h":                             "redis://u@h",
		"redis://h?sentinel_password=hunter2&x=1": "redis://h?sentinel_password=xxxxx&x=1",
		"redis://u:hunter2@h?prefix=a@b":          "redis://u:xxxxx@h?prefix=a@b",
		"u:hunter2@h":                             "(unparsable URL, not shown as it may hold a password)",
		"memory://":                               "memory://",
		"redis://:Tr0ub4dor?3x@127.0.0.1:6379":    "redis://xxxxx@127.0.0.1:6379",
		"redis://u:a@b?c@h?prefix=p":              "redis://xxxxx@h?prefix=p",
		"redis://u:p@h?prefix=a@b?c":              "redis://u:xxxxx@h?prefix=a@b?c",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestParseQuorum(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string // the quorum's name, or "" for an error
	}{
		{"majority", 3, "majority"},
		{"all", 3, "unanimous"},
		{"2", 3, "at least 2"},
		{"3", 5, "at least 3"},
		{"1", 3, ""},
		{"2", 4, ""},
		{"4", 3, ""},
		{"most", 3, ""},
	} {
		q, err := parseQuorum(tc.s, tc.n)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("parseQuorum(%q, %d) = %v; want an error", tc.s, tc.n, q)
		case tc.want != "" && (err != nil || q.(interface{ String() string }).String() != tc.want):
			t.Errorf("parseQuorum(%q, %d) = %v, %v; want %s", tc.s, tc.n, q, err, tc.want)
		}
	}
}

func TestParseFlagsInterspersed(t *testing.T) {
	fs := newFlagSet("x")
	j := fs.Bool("json", false, "")
	pos, err := parseFlags(fs, []string{"a", "--json", "b", "--", "--c"}, true)
	if err != nil || !*j || strings.Join(pos, " ") != "a b --c" {
		t.Fatalf("parseFlags = %q, %v (json %v); want [a b --c] with --json", pos, err, *j)
	}
	fs = newFlagSet("run")
	v := fs.Bool("v", false, "")
	pos, err = parseFlags(fs, []string{"-v", "res", "cmd", "-v"}, false)
	if err != nil || !*v || strings.Join(pos, " ") != "res cmd -v" {
		t.Fatalf("parseFlags = %q, %v; want [res cmd -v]", pos, err)
	}
}

func TestHistogram(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(timeMs(i))
	}
	for _, tc := range []struct {
		q    float64
		want int
	}{{0.5, 500}, {0.9, 900}, {0.99, 990}, {1, 1000}} {
		got := h.quantile(tc.q)
		if lo, hi := timeMs(tc.want)*98/100, timeMs(tc.want)*102/100; got < lo || got > hi {
			t.Errorf("quantile(%v) = %v; want %v within 2%%", tc.q, got, timeMs(tc.want))
		}
	}
	if h.max != timeMs(1000) || h.n != 1000 {
		t.Errorf("max, n = %v, %d; want 1s, 1000", h.max, h.n)
	}
	for _, v := range []uint64{0, 1, 127, 128, 255, 256, 1 << 40, 1<<63 - 1} {
		i := histIndex(v)
		if i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d; beyond %d buckets", v, i, histBuckets)
		}
		if mid := uint64(histValue(i)); v >= 128 && (mid < v-v/64 || mid > v+v/64) {
			t.Errorf("histValue(histIndex(%d)) = %d; want within 1.6%%", v, mid)
		}
	}
}

func timeMs(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// A "?" in a password, unescaped, is refused as a usage error, for every
// scheme, and neither the message nor the URL it shows holds any of the
// password: nor its tail, once shown as a query parameter's name.
func TestPasswordWithQuestionMark(t *testing.T) {
	if len(schemes) == 0 {
		t.Fatal("no schemes registered")
	}
	for scheme := range schemes {
		for _, userinfo := range []string{":Tr0ub4dor?3x", "u:Tr0ub4dor?3x", "u:Tr0@ub4dor?3x"} {
			raw := scheme + "://" + userinfo + "@127.0.0.1:6379/m?name=n"
			code, _, errOut := runCLI(t, map[string]string{storesEnv: raw}, "run", "job", "--", "true")
			if code != exitUsage || !strings.Contains(errOut, "%3F") || !strings.Contains(errOut, scheme+"://xxxxx@127.0.0.1:6379") ||
				strings.Contains(errOut, "Tr0") || strings.Contains(errOut, "3x") || strings.Contains(errOut, "ub4dor") {
				t.Errorf("run with $%s=%s: exit %d, stderr %q; want %d, asking for %%3F, with the userinfo shown as xxxxx", storesEnv, raw, code, errOut, exitUsage)
			}
		}
	}
}
