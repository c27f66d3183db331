package waldur

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

const (
	// maxListRestarts bounds how often a listing starts over because the
	// collection changed while it was being paged.
	maxListRestarts = 3
	// maxPages is a safety stop against a server that always offers a next page.
	maxPages = 10000
)

// errListChanged marks a listing that saw the collection change between pages.
var errListChanged = errors.New("the list changed while it was being paged")

// listAll reads every page of a list endpoint (query q, without page/page_size).
// It stops when X-Result-Count items were read; without that header when the
// Link header has no rel="next"; without either at a short page or at the 404
// "Invalid page." that follows a full last page. When the total
// changes between pages, or a later page vanishes, it starts over, so a
// concurrent change cannot produce a partial or duplicated list.
func listAll[T any](ctx context.Context, c *Client, kind, path string, q url.Values) ([]T, error) {
	for attempt := 0; ; attempt++ {
		items, err := listOnce[T](ctx, c, kind, path, q)
		if err == nil || !errors.Is(err, errListChanged) {
			return items, err
		}
		if attempt == maxListRestarts {
			return nil, fmt.Errorf("%w (gave up after %d attempts)", err, attempt+1)
		}
		c.log.Debug("waldur list changed while paging, starting over", "kind", kind, "error", err)
	}
}

func listOnce[T any](ctx context.Context, c *Client, kind, path string, q url.Values) ([]T, error) {
	all := []T{} // an empty list encodes as [] in snapshots, not null
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
				return all, nil
			case page > 1 && IsNotFound(err):
				return nil, fmt.Errorf("%w: page %d is gone: %w", errListChanged, page, err)
			}
			return nil, err
		}
		headerless = r.header.Get("X-Result-Count") == "" && len(r.header.Values("Link")) == 0
		items, err := decodeList[T](r)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		more, err := morePages(r, &total, len(all), len(items), c.opts.PageSize)
		if err != nil || !more {
			return all, err
		}
	}
	return nil, fmt.Errorf("list %s: more than %d pages", path, maxPages)
}

// morePages decides whether to fetch another page; total carries the
// X-Result-Count of the first page.
func morePages(r *reply, total *int, have, got, pageSize int) (bool, error) {
	if v := r.header.Get("X-Result-Count"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return false, fmt.Errorf("decode %s: invalid X-Result-Count %q", r.url, v)
		}
		switch {
		case *total >= 0 && n != *total:
			return false, fmt.Errorf("%w: X-Result-Count went from %d to %d", errListChanged, *total, n)
		case have > n:
			return false, fmt.Errorf("%w: read %d items but X-Result-Count is %d", errListChanged, have, n)
		case have < n && got == 0:
			return false, fmt.Errorf("%w: empty page before X-Result-Count %d was reached", errListChanged, n)
		}
		*total = n
		return have < n, nil
	}
	if links := r.header.Values("Link"); len(links) > 0 {
		_, next := parseLinks(strings.Join(links, ","))["next"]
		return next && got > 0, nil
	}
	return got >= pageSize, nil
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
