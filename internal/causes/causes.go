// Package causes says a cause several failures share once: "A, B: cause"
// instead of the cause once per realm, offering or call.
package causes

import (
	"errors"
	"strings"
)

// Item is a message and what it concerns (may be empty).
type Item struct {
	Context, Message string
}

// Grouped is the items of one cause: Context names them all ("A, B"),
// Message is the cause, Members their indexes.
type Grouped struct {
	Item
	Members []int
}

// String is "<context>: <message>", or the message without a context.
func (g Grouped) String() string { return line(g.Context, g.Message) }

// Group returns each item alone, except that items whose messages end in the
// same cause are one group, saying it once: "<context>, <context>: <cause>".
// The cause is the longest common tail of the messages that starts a ": "-
// separated part and has two parts at least. An item without a context is
// named by the first part of its message before the cause. Groups are in the
// order of their first item.
func Group(items []Item) []Grouped {
	done := make([]bool, len(items))
	var out []Grouped
	for i, it := range items {
		if done[i] {
			continue
		}
		members := []int{i}
		for j := i + 1; j < len(items); j++ {
			if !done[j] && cause(it.Message, items[j].Message) != "" {
				members = append(members, j)
			}
		}
		c := items[i].Message
		for _, j := range members[1:] {
			c = cause(c, items[j].Message)
		}
		if len(members) == 1 || c == "" {
			out = append(out, Grouped{it, []int{i}})
			continue
		}
		var names []string
		for _, j := range members {
			done[j] = true
			if n := name(items[j], c); n != "" && !contains(names, n) {
				names = append(names, n)
			}
		}
		out = append(out, Grouped{Item{strings.Join(names, ", "), c}, members})
	}
	return out
}

// Lines groups the lines of a message (an errors.Join of several) by cause.
func Lines(msg string) string {
	var items []Item
	for _, l := range strings.Split(msg, "\n") {
		items = append(items, Item{Message: l})
	}
	var lines []string
	for _, g := range Group(items) {
		lines = append(lines, g.String())
	}
	return strings.Join(lines, "\n")
}

// Join is errors.Join whose message says a shared cause once (Lines); the
// errors stay reachable with errors.Is and errors.As.
func Join(errs ...error) error {
	j := errors.Join(errs...)
	if j == nil {
		return nil
	}
	return &joined{j}
}

type joined struct{ err error }

func (j *joined) Error() string   { return Lines(j.err.Error()) }
func (j *joined) Unwrap() []error { return j.err.(interface{ Unwrap() []error }).Unwrap() }

// cause is the longest tail a and b share that starts a part (the whole
// message, or after ": ") and has two parts at least; "" when none.
func cause(a, b string) string {
	for _, t := range tails(a) {
		if strings.Contains(t, ": ") && (t == b || strings.HasSuffix(b, ": "+t)) {
			return t
		}
	}
	return ""
}

// QuotedTail is the longest tail of msg that starts a part, has two parts
// at least and 40 characters, and appears in text; "" when none does.
func QuotedTail(msg, text string) string {
	for _, t := range tails(msg) {
		if len(t) >= 40 && strings.Contains(t, ": ") && strings.Contains(text, t) {
			return t
		}
	}
	return ""
}

// tails lists the tails of m that start a part, longest first.
func tails(m string) []string {
	out := []string{m}
	for i := 0; ; {
		k := strings.Index(m[i:], ": ")
		if k < 0 {
			return out
		}
		i += k + 2
		out = append(out, m[i:])
	}
}

// name is what an item of a group is called: its context, else the first
// part of its message before the cause.
func name(it Item, cause string) string {
	if it.Context != "" {
		return it.Context
	}
	before := strings.TrimSuffix(strings.TrimSuffix(it.Message, cause), ": ")
	first, _, _ := strings.Cut(before, ": ")
	return first
}

func line(context, msg string) string {
	if context == "" {
		return msg
	}
	return context + ": " + msg
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
