// Package waitline is the line of a process's callers waiting for the
// release of one lock behind one notification channel (a Redis
// subscription, a PostgreSQL LISTEN): each notification wakes the caller
// that has waited longest, and a wake no caller can use is handed on. The
// stores that wake waiters on release share it.
package waitline
