package main

import (
	"encoding/json"
	"io"
)

// printJSON prints v as indented JSON for a reader or a script: names and
// messages as they are, without escaping '&', '<' and '>' as for HTML.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
