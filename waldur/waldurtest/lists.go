package waldurtest

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DRF paging settings of Waldur.
const (
	defaultPageSize = 10
	maxPageSize     = 300
)

// filterKind is how a django-filter query parameter is matched.
type filterKind int

const (
	uuidList   filterKind = iota // comma-separated UUIDs
	uuidSingle                   // one UUID
	choices                      // repeated key, values from the parameter's enum
	boolean                      // true/false
	exact                        // one value, compared as a string
	after                        // a date-time; matches later values
)

// filter maps a query parameter onto a wire key.
type filter struct {
	param, key string
	kind       filterKind
}

var (
	resourceFilters = []filter{
		{"offering_uuid", "offering_uuid", uuidList},
		{"state", "state", choices},
		{"project_uuid", "project_uuid", uuidSingle},
		{"customer_uuid", "customer_uuid", uuidSingle},
		{"modified", "modified", after},
	}
	orderFilters = []filter{
		{"offering_uuid", "offering_uuid", uuidSingle},
		{"state", "state", choices},
		{"type", "type", choices},
		{"resource_uuid", "marketplace_resource_uuid", uuidSingle},
		{"project_uuid", "project_uuid", uuidSingle},
	}
	offeringUserFilters = []filter{
		{"offering_uuid", "offering_uuid", uuidList},
		{"is_restricted", "is_restricted", boolean},
		{"state", "state", choices},
		{"user_uuid", "user_uuid", uuidSingle},
	}
)

// list answers a list endpoint: filter, order (o=), page, select fields. Like
// every handler it runs with s.mu held.
func (s *Server) list(r *http.Request, op *operation, items []object, filters []filter) *response {
	q := r.URL.Query()
	var preds []func(object) bool
	for _, f := range filters {
		values := q[f.param]
		if len(values) == 0 || (len(values) == 1 && values[0] == "") {
			continue
		}
		pred, msg := f.compile(values, op)
		if msg != "" {
			return jsonResponse(http.StatusBadRequest, map[string][]string{f.param: {msg}})
		}
		preds = append(preds, pred)
	}
	match := func() []object {
		var matched []object
		for _, o := range items {
			if !slices.ContainsFunc(preds, func(p func(object) bool) bool { return !p(o) }) {
				matched = append(matched, o)
			}
		}
		order(matched, q.Get("o"))
		return matched
	}
	pageNo, _ := strconv.Atoi(q.Get("page"))
	fault := s.takeListFault(r.URL.Path, q, max(pageNo, 1))
	matched, cached := s.lists.get(r, s.mu.gen)
	if !cached || fault != nil {
		matched = match()
	}
	if fault != nil && fault.Kind == ListTerminateBetweenPages && len(matched) > 0 {
		matched[0]["state"], matched[0]["modified"] = "Terminated", now()
		s.mu.gen++ // a change in the middle of a read
		matched = match()
	}
	s.lists.put(r, s.mu.gen, matched)
	lo, hi, header, errResp := s.paginate(r, len(matched))
	if errResp != nil {
		return errResp
	}
	page := make([]object, 0, hi-lo)
	for _, o := range matched[lo:hi] {
		page = append(page, selectFields(o, q["field"]))
	}
	if fault != nil {
		switch fault.Kind {
		case ListRepeatItem:
			if lo > 0 && len(page) > 0 {
				page[0] = selectFields(matched[lo-1], q["field"])
			}
		case ListWrongCount:
			if header.Get("X-Result-Count") != "" {
				header.Set("X-Result-Count", strconv.Itoa(len(matched)+fault.CountDelta))
			}
		}
	}
	resp := jsonResponse(http.StatusOK, page)
	for k, v := range header {
		resp.header[k] = v
	}
	return resp
}

// takeListFault returns the list fault for this path and page, if any, and
// counts it down. It runs with s.mu held.
func (s *Server) takeListFault(path string, q url.Values, page int) *ListFault {
	for i, f := range s.listFaults {
		first := max(f.Page, 2)
		if f.Kind == ListWrongCount {
			first = max(f.Page, 1)
		}
		if f.Count > 0 && page >= first && strings.HasPrefix(path, f.PathPrefix) && queryHas(q, f.Query) {
			f.Count--
			cp := *f
			if f.Count == 0 {
				s.listFaults = append(s.listFaults[:i], s.listFaults[i+1:]...)
			}
			return &cp
		}
	}
	return nil
}

// queryHas reports whether q carries every value of want.
func queryHas(q, want url.Values) bool {
	for k, vs := range want {
		for _, v := range vs {
			if !slices.Contains(q[k], v) {
				return false
			}
		}
	}
	return true
}

// compile turns the filter's query values into a predicate, or returns the
// django-filter message for a malformed value.
func (f filter) compile(values []string, op *operation) (func(object) bool, string) {
	switch f.kind {
	case uuidList, uuidSingle:
		want := values[:1]
		if f.kind == uuidList {
			want = strings.Split(values[0], ",")
		}
		keys := make([]string, 0, len(want))
		for _, w := range want {
			if !uuidPattern.MatchString(strings.TrimSpace(w)) {
				return nil, "Enter a valid UUID."
			}
			keys = append(keys, uuidKey(strings.TrimSpace(w)))
		}
		return func(o object) bool { return slices.Contains(keys, uuidKey(o[f.key])) }, ""
	case choices:
		allowed := paramEnum(op, f.param)
		for _, v := range values {
			if len(allowed) > 0 && !slices.Contains(allowed, v) {
				return nil, fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", v)
			}
		}
		return func(o object) bool { return slices.Contains(values, text(o[f.key])) }, ""
	case exact:
		return func(o object) bool { return text(o[f.key]) == values[0] }, ""
	case after:
		t, err := time.Parse(time.RFC3339Nano, values[0])
		if err != nil {
			return nil, "Enter a valid date/time."
		}
		return func(o object) bool {
			got, err := time.Parse(time.RFC3339Nano, text(o[f.key]))
			return err == nil && got.After(t)
		}, ""
	case boolean:
		want, err := strconv.ParseBool(values[0])
		if err != nil {
			return nil, "Enter a valid boolean."
		}
		return func(o object) bool { got, _ := o[f.key].(bool); return got == want }, ""
	}
	return nil, fmt.Sprintf("unsupported filter kind %d", f.kind)
}

// paramEnum lists the allowed values of a query parameter from the contract.
func paramEnum(op *operation, name string) []string {
	p := op.Route.Operation.Parameters.GetByInAndName("query", name)
	if p == nil || p.Schema == nil || p.Schema.Value == nil {
		return nil
	}
	sch := p.Schema.Value
	if sch.Items != nil && sch.Items.Value != nil {
		sch = sch.Items.Value
	}
	var out []string
	for _, e := range sch.Enum {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// order sorts by the comma-separated o= keys (a leading "-" reverses); objects
// that tie keep insertion order.
func order(items []object, o string) {
	if o == "" {
		return
	}
	keys := strings.Split(o, ",")
	// Each item's sort values are read once, not in every comparison.
	type sortKey struct {
		text   string
		time   time.Time
		isTime bool
	}
	type keyed struct {
		o    object
		keys []sortKey
	}
	list := make([]keyed, len(items))
	for i, it := range items {
		list[i] = keyed{o: it, keys: make([]sortKey, len(keys))}
		for j, k := range keys {
			sk := sortKey{text: text(it[strings.TrimPrefix(k, "-")])}
			if t, err := time.Parse(time.RFC3339Nano, sk.text); err == nil {
				sk.time, sk.isTime = t, true
			}
			list[i].keys[j] = sk
		}
	}
	slices.SortStableFunc(list, func(a, b keyed) int {
		for j, k := range keys {
			ka, kb := a.keys[j], b.keys[j]
			c := cmp.Compare(ka.text, kb.text)
			if ka.isTime && kb.isTime {
				c = ka.time.Compare(kb.time)
			}
			if strings.HasPrefix(k, "-") {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	for i := range list {
		items[i] = list[i].o
	}
}

// text is a value as fmt.Sprint prints it, a string without formatting.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// selectFields keeps only the requested keys (all when none are requested).
func selectFields(o object, fields []string) object {
	if len(fields) == 0 {
		return o
	}
	out := object{}
	for _, f := range fields {
		if v, ok := o[f]; ok {
			out[f] = v
		}
	}
	return out
}

// paginate implements Waldur's LinkHeaderPagination (DRF page-number paging):
// page is 1-based ("last" allowed), page_size defaults to 10 and is clamped to
// 300, a page outside the range is 404 "Invalid page.". The headers are
// X-Result-Count and a Link header with first/prev/next/last built from the
// absolute request URL, with the page parameter removed from the first link (and
// from the last and prev links when they point at page 1) and query keys sorted.
func (s *Server) paginate(r *http.Request, n int) (lo, hi int, header http.Header, errResp *response) {
	q := r.URL.Query()
	size := defaultPageSize
	if v, err := strconv.Atoi(q.Get("page_size")); err == nil && v > 0 {
		size = min(v, maxPageSize)
	}
	pages := max(1, (n+size-1)/size)
	page := 1
	switch v := q.Get("page"); v {
	case "":
	case "last":
		page = pages
	default:
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > pages {
			return 0, 0, nil, detail(http.StatusNotFound, "Invalid page.")
		}
		page = p
	}
	lo, hi = (page-1)*size, min(page*size, n)
	header = http.Header{}
	if s.resultCount {
		header.Set("X-Result-Count", strconv.Itoa(n))
	}
	if s.linkHeader {
		header.Set("Link", s.links(r, page, pages))
	}
	return lo, hi, header, nil
}

func (s *Server) links(r *http.Request, page, pages int) string {
	u := url.URL{Scheme: "http", Host: r.Host, Path: s.prefix + r.URL.Path, RawQuery: r.URL.RawQuery}
	at := func(p int) string {
		q := u.Query()
		if p == 1 {
			q.Del("page")
		} else {
			q.Set("page", strconv.Itoa(p))
		}
		v := u
		v.RawQuery = q.Encode()
		return v.String()
	}
	links := []string{fmt.Sprintf("<%s>; rel=\"first\"", at(1))}
	if page > 1 {
		links = append(links, fmt.Sprintf("<%s>; rel=\"prev\"", at(page-1)))
	}
	if page < pages {
		links = append(links, fmt.Sprintf("<%s>; rel=\"next\"", at(page+1)))
	}
	links = append(links, fmt.Sprintf("<%s>; rel=\"last\"", at(pages)))
	return strings.Join(links, ", ")
}

// stateLock is the fake's one lock, with a generation that moves every time
// it is released after a change: Unlock is for code that may have changed
// the state (every exported method, every request but a read), unlockRead
// for code that only read what a listing shows.
type stateLock struct {
	sync.Mutex
	gen uint64
	// same is set by a request that found nothing to change.
	same bool
}

// Unlock releases the lock after a change, unless unchanged was called.
func (l *stateLock) Unlock() {
	if !l.same {
		l.gen++
	}
	l.same = false
	l.Mutex.Unlock()
}

// unchanged tells the coming Unlock that the holder changed nothing (a
// repeated registration), so that what was read stays current.
func (l *stateLock) unchanged() { l.same = true }

// unlockRead releases the lock after a read.
func (l *stateLock) unlockRead() { l.Mutex.Unlock() }

// genCache keeps values computed at one generation of the state
// (stateLock): they are all dropped when the generation moves, and all when
// max are kept.
type genCache[V any] struct {
	max     int
	gen     uint64
	entries map[string]V
}

// get returns the value kept for key at generation gen.
func (c *genCache[V]) get(key string, gen uint64) (V, bool) {
	if c.gen != gen {
		var zero V
		return zero, false
	}
	v, ok := c.entries[key]
	return v, ok
}

// put keeps v for key at generation gen.
func (c *genCache[V]) put(key string, gen uint64, v V) {
	if c.entries == nil || c.gen != gen || len(c.entries) >= c.max {
		c.gen, c.entries = gen, map[string]V{}
	}
	c.entries[key] = v
}

// listCache keeps the latest listings' matched and ordered objects, so that
// reading their later pages does not filter and sort the whole collection
// again; an entry is only used while nothing changed (the generation) and
// for the same listing (path and query but the page). A client reads
// several listings at once, so a few are kept.
type listCache struct{ genCache[[]object] }

// maxCachedLists is how many listings listCache keeps.
const maxCachedLists = 8

func listKey(r *http.Request) string {
	q := r.URL.Query()
	q.Del("page")
	return r.URL.Path + "?" + q.Encode()
}

// get returns the cached listing of r at generation gen.
func (c *listCache) get(r *http.Request, gen uint64) ([]object, bool) {
	return c.genCache.get(listKey(r), gen)
}

// put caches the listing of r at generation gen.
func (c *listCache) put(r *http.Request, gen uint64, matched []object) {
	c.max = maxCachedLists
	c.genCache.put(listKey(r), gen, matched)
}

// answerCache keeps the answers to reads at one generation of the state
// (WithAnswerCache); off, it keeps nothing.
type answerCache struct {
	on bool
	genCache[*response]
}

// maxCachedAnswers bounds answerCache; it starts over when full.
const maxCachedAnswers = 1 << 15

func answerKey(r *http.Request) string { return r.Host + " " + r.URL.RequestURI() }

// get returns the answer kept for r at generation gen.
func (c *answerCache) get(r *http.Request, gen uint64) (*response, bool) {
	if !c.on {
		return nil, false
	}
	return c.genCache.get(answerKey(r), gen)
}

// put keeps the successful answer resp to r at generation gen.
func (c *answerCache) put(r *http.Request, gen uint64, resp *response) {
	if !c.on || resp.status != http.StatusOK {
		return
	}
	c.max = maxCachedAnswers
	c.genCache.put(answerKey(r), gen, resp)
}
