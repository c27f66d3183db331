// Package redact masks credentials in text that leaves the process: error
// messages, log attributes, run reports, metrics and commit messages.
//
// A Redactor knows a set of secrets (tokens, passwords, client secrets). Its
// String method replaces every occurrence of each secret in every form a server
// or a library may echo it in:
//
//   - raw;
//   - URL-encoded, as a query or form value (url.QueryEscape) and as a path
//     segment (url.PathEscape), in upper- and lower-case hex;
//   - JSON-escaped (with and without HTML escaping);
//   - base64 (standard and URL alphabets, padded or not) of the secret alone
//     and inside "user:secret" as an HTTP Basic header carries it, even when
//     the user is not known: the part of the encoding that depends only on the
//     secret is masked for each of the three alignments;
//   - cut short at the end of the text (a server that quotes only the start of
//     a body), when at least MinPartial characters remain;
//
// and URL user information (scheme://user:password@host) whatever it holds.
//
// Mask before truncating or quoting: a secret cut in half by a truncation can
// no longer be recognised in full.
//
// Default is the process-wide Redactor; the config package registers every
// secret it reads there, and the clients derive their own with With.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Mask replaces a secret.
const Mask = "[redacted]"

// MinSecret is the shortest secret that is masked: shorter values would mask
// ordinary words everywhere. Such credentials are refused nowhere, but they
// are far too short to be safe anyway.
const MinSecret = 4

// MinPartial is the shortest start of a secret that is masked when a text ends
// with it (a truncated echo).
const MinPartial = 6

// Redactor masks registered secrets. The zero value is not usable; use New or
// Default. It is safe for concurrent use.
type Redactor struct {
	parent *Redactor

	mu      sync.RWMutex
	secrets []string // registered secrets, deduplicated
	forms   []string // every masked form, longest first
	seen    map[string]bool
}

// New returns an empty Redactor.
func New() *Redactor { return &Redactor{seen: map[string]bool{}} }

var defaultRedactor = New()

// Default is the process-wide Redactor.
func Default() *Redactor { return defaultRedactor }

// Register adds secrets to the Default Redactor.
func Register(secrets ...string) { defaultRedactor.Add(secrets...) }

// RegisterBasic adds a user's secret and its Basic-auth form to the Default
// Redactor.
func RegisterBasic(user, secret string) { defaultRedactor.AddBasic(user, secret) }

// String masks the secrets of the Default Redactor in s.
func String(s string) string { return defaultRedactor.String(s) }

// Error masks the secrets of the Default Redactor in err.
func Error(err error) error { return defaultRedactor.Error(err) }

// With returns a Redactor that masks r's secrets (also those registered with r
// later) and the given ones, which are not added to r.
func (r *Redactor) With(secrets ...string) *Redactor {
	c := New()
	c.parent = r
	c.Add(secrets...)
	return c
}

// Add registers secrets. Empty, whitespace-only and too short values
// (below MinSecret characters) are ignored.
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		if utf8.RuneCountInString(strings.TrimSpace(s)) < MinSecret || r.seen[s] {
			continue
		}
		r.seen[s] = true
		r.secrets = append(r.secrets, s)
		r.forms = append(r.forms, forms(s)...)
	}
	r.sortForms()
}

// AddBasic registers secret and the exact Basic-auth encodings of
// "user:secret".
func (r *Redactor) AddBasic(user, secret string) {
	if utf8.RuneCountInString(strings.TrimSpace(secret)) < MinSecret {
		return
	}
	r.Add(secret)
	r.mu.Lock()
	defer r.mu.Unlock()
	pair := user + ":" + secret
	for _, enc := range encodings {
		r.forms = append(r.forms, enc.EncodeToString([]byte(pair)))
	}
	r.sortForms()
}

func (r *Redactor) sortForms() {
	slices.SortFunc(r.forms, func(a, b string) int { return len(b) - len(a) })
	r.forms = slices.Compact(r.forms)
}

var encodings = []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding}

// forms lists the spellings of s that are masked.
func forms(s string) []string {
	out := []string{s}
	q, p := url.QueryEscape(s), url.PathEscape(s)
	out = append(out, q, p, lowerHex(q), lowerHex(p))
	// JSON escaping, with and without HTML escaping of <, > and &.
	if b, err := json.Marshal(s); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) == nil {
		j := strings.TrimSpace(sb.String())
		out = append(out, j[1:len(j)-1])
	}
	// base64: the part of the encoding of prefix+s+suffix that depends only on
	// s, for each alignment of s within the encoded text.
	for shift := range 3 {
		if core := base64Core(s, shift); core != "" {
			out = append(out, core, strings.NewReplacer("+", "-", "/", "_").Replace(core))
		}
	}
	return out
}

// base64Core returns the characters of the standard base64 encoding of
// shift bytes + s + anything that are determined by s alone: the first
// (shift != 0) and the last partial groups depend on their neighbours.
func base64Core(s string, shift int) string {
	b := []byte(s)
	// Bytes of s that start a full 3-byte group after shift unknown bytes.
	skip := (3 - shift) % 3
	if len(b) < skip+3 {
		return ""
	}
	b = b[skip:]
	b = b[:len(b)/3*3]
	if len(b) < 3 || len(b)*4/3 < MinSecret {
		return ""
	}
	return base64.StdEncoding.EncodeToString(b)
}

// lowerHex lower-cases the hex digits of percent escapes.
func lowerHex(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			b.WriteByte('%')
			b.WriteString(strings.ToLower(s[i+1 : i+3]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// userinfo matches the user information of a URL in free text.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#@\s"'<>]+@`)

// String returns s with every form of every secret and every URL's user
// information replaced by Mask.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	for c := r; c != nil; c = c.parent {
		s = c.mask(s)
	}
	return s
}

func (r *Redactor) mask(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, f := range r.forms {
		if strings.Contains(s, f) {
			s = strings.ReplaceAll(s, f, Mask)
		}
	}
	// A text cut short inside a secret: mask the start that remains.
	body, tail := s, ""
	for _, ell := range []string{"…", "..."} {
		if b, ok := strings.CutSuffix(s, ell); ok {
			body, tail = b, ell
			break
		}
	}
	for _, f := range r.forms {
		for n := min(len(f)-1, len(body)); n >= MinPartial; n-- {
			if strings.HasSuffix(body, f[:n]) {
				return body[:len(body)-n] + Mask + tail
			}
		}
	}
	return s
}

// Error returns err with its text masked, keeping its chain for errors.Is and
// errors.As; nil for nil, err itself when nothing needed masking.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := r.String(msg)
	if clean == msg {
		return err
	}
	return &redacted{msg: clean, err: err}
}

// redacted is an error whose text was masked; Unwrap keeps the chain.
type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// URL returns raw without its user information, for display, with the
// Default Redactor's secrets masked; text that does not parse as a URL with a
// scheme is masked with String.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return String(raw)
	}
	u.User = nil
	return String(u.String())
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that masks, with the
// Default Redactor, every string, error and Stringer attribute value and
// the message: install it on the process's log handler so that no log line
// shows a secret whatever a caller logs.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); s != "" {
			a.Value = slog.StringValue(String(s))
		}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			a.Value = slog.StringValue(String(x.Error()))
		case fmt.Stringer:
			a.Value = slog.StringValue(String(x.String()))
		}
	}
	return a
}
