package natsbridge

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// ErrSubject is wrapped by the error Export and Import return for a subject
// NATS would not deliver as meant.
var ErrSubject = errors.New("natsbridge: invalid subject")

// DefaultSubject returns the subject that Export and Import use for T when
// they are given an empty one: "topic." followed by T's package path, its
// elements as tokens, and T's name. Each character that is not an ASCII
// letter, digit, '-' or '_' becomes '_', so that every token is literal:
//
//	github.com/acme/shop.Order   →  topic.github_com.acme.shop.Order
//	example.com/x.Pair[int,bool] →  topic.example_com.x.Pair_int_bool_
//
// Go type identity does not cross processes: two programs agree on a type
// only if they agree on its subject and its encoding. The default is a
// convenience for programs that share the type's package; it is not
// injective (a.b and a_b map to the same token), so name the subject
// explicitly wherever two types could meet.
//
// DefaultSubject panics if T has no name (a struct literal, a slice, a
// pointer type): such a type has no package path to derive from.
func DefaultSubject[T any]() string {
	s, err := defaultSubject(reflect.TypeFor[T]())
	if err != nil {
		panic(err.Error())
	}
	return s
}

func defaultSubject(t reflect.Type) (string, error) {
	if t.Name() == "" || t.PkgPath() == "" {
		return "", fmt.Errorf("%w: %v has no package path and name to derive a subject from: name one", ErrSubject, t)
	}
	var b strings.Builder
	b.WriteString("topic")
	for _, elem := range strings.Split(t.PkgPath(), "/") {
		b.WriteByte('.')
		writeToken(&b, elem)
	}
	b.WriteByte('.')
	writeToken(&b, t.Name())
	return b.String(), nil
}

// writeToken writes s with every character outside [A-Za-z0-9_-] made '_'.
func writeToken(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !tokenChar(c) {
			c = '_'
		}
		b.WriteByte(c)
	}
}

func tokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// checkSubject reports why NATS would not deliver subject s as meant: an
// empty subject or token (a..b, .a, a.), white space or a control
// character, or, unless wild is set, a wildcard token (* or >). With wild
// set, > may only be the last token. The client accepts all of these and
// silently drops, or matches more than meant.
func checkSubject(s string, wild bool) error {
	if s == "" {
		return fmt.Errorf("%w: empty", ErrSubject)
	}
	tokens := strings.Split(s, ".")
	for i, tok := range tokens {
		switch {
		case tok == "":
			return fmt.Errorf("%w %q: empty token", ErrSubject, s)
		case strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			return fmt.Errorf("%w %q: white space or control character", ErrSubject, s)
		case tok == "*" || tok == ">":
			if !wild {
				return fmt.Errorf("%w %q: wildcard %q where a literal subject is needed", ErrSubject, s, tok)
			}
			if tok == ">" && i != len(tokens)-1 {
				return fmt.Errorf("%w %q: > must be the last token", ErrSubject, s)
			}
		}
	}
	return nil
}

// subjectOf returns subject, or T's default subject if it is empty, after
// checking it.
func subjectOf(subject string, t reflect.Type, wild bool) (string, error) {
	if subject == "" {
		return defaultSubject(t)
	}
	if err := checkSubject(subject, wild); err != nil {
		return "", err
	}
	return subject, nil
}

// streamName derives a stream name from a subject: NATS stream names allow
// no '.', '*', '>', path separator or white space, so each character outside
// [A-Za-z0-9_-] becomes '_'.
func streamName(subject string) string {
	var b strings.Builder
	writeToken(&b, subject)
	return b.String()
}
