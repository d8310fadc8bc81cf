package redisstore

import (
	"fmt"
	"reflect"
)

// NilClient reports why c, the client given to a store's New, cannot be
// used, or "" if it can: c is nil (a nil interface or a nil pointer), or
// it embeds, at any depth, a nil pointer or interface that gives it one
// of methods — a caller's wrapper of a client it did not set, whose every
// call would panic. Types of the client library (whose package path is
// lib) are not looked into. With probe set, a wrapper embedding such a
// nil is refused only if probe, calls of methods that do no I/O, panics:
// a wrapper may declare the methods itself.
func NilClient(c any, lib string, probe func(), methods ...string) string {
	v := reflect.ValueOf(c)
	if c == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return "nil client"
	}
	if t := nilEmbedded(v, lib, methods, 0); t != "" && (probe == nil || panics(probe)) {
		return fmt.Sprintf("the client, a %T, embeds a nil %s, whose methods it promotes: every call would panic", c, t)
	}
	return ""
}

// panics reports whether f panics.
func panics(f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f()
	return false
}

// nilEmbedded returns the type of a nil field embedded in v that
// promotes one of methods, or "".
func nilEmbedded(v reflect.Value, lib string, methods []string, depth int) string {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() || v.Kind() == reflect.Pointer && inPackage(v.Type(), lib) {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || inPackage(v.Type(), lib) || depth >= 8 {
		return ""
	}
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if !f.Anonymous {
			continue
		}
		if k := fv.Kind(); (k == reflect.Pointer || k == reflect.Interface) && fv.IsNil() {
			if promotes(f.Type, methods) {
				return f.Type.String()
			}
			continue
		}
		if t := nilEmbedded(fv, lib, methods, depth+1); t != "" {
			return t
		}
	}
	return ""
}

// inPackage reports whether t is, or points to, a type of package pkg.
func inPackage(t reflect.Type, pkg string) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == pkg
}

// promotes reports whether t has one of methods.
func promotes(t reflect.Type, methods []string) bool {
	for _, m := range methods {
		if _, ok := t.MethodByName(m); ok {
			return true
		}
	}
	return false
}
