// Package docblock rewrites the generated blocks of a document: the text
// between a begin and an end marker, which a make target writes from a run.
package docblock

import (
	"bytes"
	"errors"
	"os"
)

// Replace rewrites file's text between begin and end, each kept on its
// own line, with block.
func Replace(file, begin, end string, block []byte) error {
	text, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	before, rest, ok := bytes.Cut(text, []byte(begin))
	_, after, ok2 := bytes.Cut(rest, []byte(end))
	if !ok || !ok2 {
		return errors.New(file + " has no block between " + begin + " and " + end)
	}
	var out bytes.Buffer
	out.Write(before)
	out.WriteString(begin + "\n")
	out.Write(block)
	out.WriteString(end)
	out.Write(after)
	return os.WriteFile(file, out.Bytes(), 0o644)
}
