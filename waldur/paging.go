package waldur

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	// maxListRestarts bounds how often a listing is read again because it was
	// inconsistent (the collection changed while it was paged, a page repeated
	// an item, X-Result-Count disagreed with what was read).
	maxListRestarts = 3
	// maxPages is a safety stop against a server that always offers a next page.
	maxPages = 10000
)

// errListChanged marks a listing that saw the collection change between pages.
var errListChanged = errors.New("the list changed while it was being paged")

// InconsistentListingError is a listing that stayed inconsistent after it was
// read again maxListRestarts times: its items cannot be trusted to be complete,
// so nothing may be concluded from an item's absence. The engine keeps the
// tenants of the offering as they are and reports the error.
type InconsistentListingError struct {
	// Offering is the offering whose listing it is (set by the list methods).
	Offering UUID
	// Kind is the call kind of the listing (KindResourcesList, …).
	Kind string
	// Expected is the last X-Result-Count seen, -1 without one.
	Expected int
	// Got is the number of distinct items read in the last attempt.
	Got int
	// Duplicates are the uuids listed more than once in the last attempt.
	Duplicates []UUID
	// Reason says what was inconsistent in the last attempt.
	Reason string
	// Attempts is the number of times the listing was read.
	Attempts int
}

// Error implements error.
func (e *InconsistentListingError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "inconsistent %s listing", e.Kind)
	if e.Offering != "" {
		fmt.Fprintf(&b, " of offering %s", e.Offering)
	}
	fmt.Fprintf(&b, ": %s", e.Reason)
	if e.Expected >= 0 {
		fmt.Fprintf(&b, "; X-Result-Count %d, %d distinct item(s) read", e.Expected, e.Got)
	}
	if len(e.Duplicates) > 0 {
		ids := make([]string, len(e.Duplicates))
		for i, d := range e.Duplicates {
			ids[i] = string(d)
		}
		fmt.Fprintf(&b, "; listed twice: %s", strings.Join(ids, ", "))
	}
	fmt.Fprintf(&b, " (gave up after %d attempts; the offering's tenants are kept as they are)", e.Attempts)
	return b.String()
}

// Unwrap lets errors.Is(err, errListChanged) see a listing that changed.
func (e *InconsistentListingError) Unwrap() error { return errListChanged }

// IsInconsistentListing reports whether err is (or wraps) an
// *InconsistentListingError.
func IsInconsistentListing(err error) bool {
	var e *InconsistentListingError
	return errors.As(err, &e)
}

// withOffering fills the offering into an InconsistentListingError in err.
func withOffering(err error, offering UUID) error {
	var e *InconsistentListingError
	if errors.As(err, &e) && e.Offering == "" {
		e.Offering = offering
	}
	return err
}

// inconsistency is what one pass over a listing found wrong.
type inconsistency struct {
	reason        string
	expected, got int
	dups          []UUID
}

func (i *inconsistency) Error() string { return i.reason }

// listAll reads every page of a list endpoint (query q, without
// page/page_size) and returns its records, each listed once. It checks the
// listing: uuids are unique (a record listed twice with the same content is
// kept once; with different content the listing is inconsistent), the number
// of distinct records equals X-Result-Count, the count does not change
// between pages and no page vanishes. An inconsistent listing is read again,
// at most maxListRestarts times, then an *InconsistentListingError is
// returned. Without X-Result-Count it stops when the Link header has no
// rel="next", else at a short page or at the 404 "Invalid page." that follows
// a full last page.
func listAll(ctx context.Context, c *Client, kind, path string, q url.Values) ([]json.RawMessage, error) {
	for attempt := 0; ; attempt++ {
		items, err := listOnce(ctx, c, kind, path, q)
		var inc *inconsistency
		if !errors.As(err, &inc) {
			return items, err
		}
		if attempt == maxListRestarts {
			return nil, &InconsistentListingError{Kind: kind, Expected: inc.expected, Got: inc.got,
				Duplicates: inc.dups, Reason: inc.reason, Attempts: attempt + 1}
		}
		wait := backoff(c.opts.RetryWaitMin, c.opts.RetryWaitMax, attempt, nil)
		c.log.Info("waldur listing inconsistent, reading it again", "kind", kind, "reason", inc.reason,
			"attempt", attempt+1, "max_attempts", maxListRestarts+1, "wait", wait.String())
		if err := sleepCtx(ctx, wait); err != nil {
			return nil, err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listOnce reads the pages once; an *inconsistency error asks for another pass.
func listOnce(ctx context.Context, c *Client, kind, path string, q url.Values) ([]json.RawMessage, error) {
	var all []json.RawMessage
	total := -1
	headerless := false // the previous page had neither X-Result-Count nor Link
	for page := 1; page <= maxPages; page++ {
		pq := url.Values{}
		for k, v := range q {
			pq[k] = append([]string(nil), v...)
		}
		pq.Set("page", strconv.Itoa(page))
		pq.Set("page_size", strconv.Itoa(c.opts.PageSize))
		r, err := c.do(ctx, call{kind: kind, method: http.MethodGet, path: path, query: pq})
		if err != nil {
			switch {
			case page > 1 && IsNotFound(err) && headerless:
				// A full last page was followed by DRF's "Invalid page.".
				return checkListing(all, total)
			case page > 1 && IsNotFound(err):
				return nil, &inconsistency{reason: fmt.Sprintf("%v: page %d is gone", errListChanged, page), expected: total, got: len(all)}
			}
			return nil, err
		}
		headerless = r.header.Get("X-Result-Count") == "" && len(r.header.Values("Link")) == 0
		items, err := decodeRaws(r)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		more, err := morePages(r, &total, len(all), len(items), c.opts.PageSize)
		if err != nil {
			return nil, err
		}
		if !more {
			return checkListing(all, total)
		}
	}
	return nil, fmt.Errorf("list %s: more than %d pages", path, maxPages)
}

// checkListing removes repeated records and checks the count.
func checkListing(all []json.RawMessage, total int) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(all)) // an empty list encodes as [], not null
	first := map[string]int{}
	var dups []UUID
	differ := false
	for _, raw := range all {
		id := recordKey(raw)
		if id == "" {
			out = append(out, raw)
			continue
		}
		if i, seen := first[id]; seen {
			if !slices.Contains(dups, UUID(id)) {
				dups = append(dups, UUID(id))
			}
			if !sameJSON(out[i], raw) {
				differ = true
			}
			continue
		}
		first[id] = len(out)
		out = append(out, raw)
	}
	slices.Sort(dups)
	switch {
	case differ:
		return nil, &inconsistency{reason: "a uuid was listed twice with different content", expected: total, got: len(out), dups: dups}
	case total >= 0 && len(out) != total:
		return nil, &inconsistency{reason: "the number of distinct items read differs from X-Result-Count", expected: total, got: len(out), dups: dups}
	case total < 0 && len(dups) > 0:
		return nil, &inconsistency{reason: "a uuid was listed twice and there is no X-Result-Count to check the listing against", expected: total, got: len(out), dups: dups}
	}
	return out, nil
}

// recordKey is the normalised uuid of a raw record, "" when it has none.
func recordKey(raw json.RawMessage) string {
	s, _, ok := scanKey(raw, "uuid")
	if !ok {
		var k struct {
			UUID any `json:"uuid"`
		}
		if json.Unmarshal(raw, &k) != nil {
			return ""
		}
		s, _ = k.UUID.(string)
	}
	if s == "" {
		return ""
	}
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
}

func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// morePages decides whether to fetch another page; total carries the
// X-Result-Count of the first page.
func morePages(r *reply, total *int, have, got, pageSize int) (bool, error) {
	if v := r.header.Get("X-Result-Count"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return false, fmt.Errorf("decode %s: invalid X-Result-Count %q", r.url(), v)
		}
		switch {
		case *total >= 0 && n != *total:
			return false, &inconsistency{reason: fmt.Sprintf("%v: X-Result-Count went from %d to %d", errListChanged, *total, n), expected: n, got: have}
		case have < n && got == 0:
			return false, &inconsistency{reason: fmt.Sprintf("empty page before X-Result-Count %d was reached", n), expected: n, got: have}
		}
		*total = n
		if have >= n && hasNext(r) && got > 0 {
			return false, &inconsistency{reason: fmt.Sprintf("X-Result-Count %d was reached but the Link header offers a next page", n), expected: n, got: have}
		}
		// More records than counted (a repeated record) are sorted out by
		// checkListing.
		return have < n, nil
	}
	if len(r.header.Values("Link")) > 0 {
		return hasNext(r) && got > 0, nil
	}
	return got >= pageSize, nil
}

// hasNext reports whether the reply's Link header offers a next page.
func hasNext(r *reply) bool {
	links := r.header.Values("Link")
	if len(links) == 0 {
		return false
	}
	_, next := parseLinks(strings.Join(links, ","))["next"]
	return next
}

// parseLinks parses an RFC 8288 Link header into rel → target URL.
func parseLinks(h string) map[string]string {
	out := map[string]string{}
	for {
		start := strings.IndexByte(h, '<')
		if start < 0 {
			return out
		}
		end := strings.IndexByte(h[start:], '>')
		if end < 0 {
			return out
		}
		target := h[start+1 : start+end]
		h = h[start+end+1:]
		params := h
		if next := strings.IndexByte(h, '<'); next >= 0 {
			params = h[:next]
		}
		h = h[len(params):]
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.Trim(p, " \t,"), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
				continue
			}
			for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(v), `"`)) {
				out[strings.ToLower(rel)] = target
			}
		}
	}
}
