// Package causes says a cause several failures share once: "A, B: cause"
// instead of the cause once per realm, offering or call.
package causes

import (
	"errors"
	"fmt"
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
	var out []Grouped
	at := map[string]int{} // a two-part tail → its group in out
	for i, it := range items {
		key := lastTwo(it.Message)
		g, ok := at[key]
		if key == "" || !ok {
			if key != "" {
				at[key] = len(out)
			}
			out = append(out, Grouped{it, []int{i}})
			continue
		}
		out[g].Members = append(out[g].Members, i)
		out[g].Message = cause(out[g].Message, it.Message)
	}
	for k, g := range out {
		if len(g.Members) > 1 {
			out[k].Context = names(items, g)
		}
	}
	return out
}

// NamesShown is how many items a group names; "and N more" counts the rest.
const NamesShown = 5

// names names the items of a group, the first NamesShown of them.
func names(items []Item, g Grouped) string {
	var list []string
	more := 0
	for _, i := range g.Members {
		n := name(items[i], g.Message)
		switch {
		case n == "" || contains(list, n):
		case len(list) == NamesShown:
			more++
		default:
			list = append(list, n)
		}
	}
	s := strings.Join(list, ", ")
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// lastTwo is the tail of m made of its last two ": "-separated parts, the
// shortest a cause can be; "" when m has one part.
func lastTwo(m string) string {
	last := strings.LastIndex(m, ": ")
	if last < 0 {
		return ""
	}
	if before := strings.LastIndex(m[:last], ": "); before >= 0 {
		return m[before+2:]
	}
	return m
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
		if !strings.Contains(t, ": ") {
			break
		}
		if t == b || strings.HasSuffix(b, ": "+t) {
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
