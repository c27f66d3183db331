package manifest

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Encode writes v as block-style YAML with sorted mapping keys. The output depends
// only on the value, so equal objects always give identical bytes.
//
// It exists because the general-purpose route (JSON, then YAML through
// sigs.k8s.io/yaml) costs about 120 µs for one small object here, which alone
// would spend the 10,000-tenant render budget several times over; this encoder
// handles just the JSON data model (maps, lists, strings, numbers, booleans, null)
// and quotes every string a YAML 1.1 or 1.2 reader could take for anything else.
//
// The result is an exact-size copy of a pooled buffer: a buffer grown by
// doubling holds up to twice what it wrote, and a render keeps every file.
func Encode(v any) ([]byte, error) {
	b := encodeBuffers.Get().(*bytes.Buffer)
	defer func() {
		if b.Cap() <= maxPooledBuffer {
			b.Reset()
			encodeBuffers.Put(b)
		}
	}()
	if err := encodeTop(b, v); err != nil {
		return nil, err
	}
	out := make([]byte, b.Len())
	copy(out, b.Bytes())
	return out, nil
}

// maxPooledBuffer is the largest encode buffer kept for reuse; the odd
// larger document gets a buffer of its own.
const maxPooledBuffer = 64 << 10

var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// EncodeTo appends the YAML of v to b.
func EncodeTo(b *bytes.Buffer, v any) error { return encodeTop(b, v) }

func encodeTop(b *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			b.WriteString("{}\n")
			return nil
		}
		return encodeMap(b, t, 0)
	case []any:
		if len(t) == 0 {
			b.WriteString("[]\n")
			return nil
		}
		return encodeList(b, t, 0)
	}
	if err := writeScalar(b, v); err != nil {
		return err
	}
	b.WriteByte('\n')
	return nil
}

func indent(b *bytes.Buffer, n int) {
	for i := 0; i < n; i++ {
		b.WriteByte(' ')
	}
}

// maxImplicitKey bounds the encoded length of a key written as "key: value".
// YAML readers give up on an implicit key longer than 1024 characters, so a
// longer key is written in the explicit form "? key" NL ": value".
const maxImplicitKey = 1000

// encodeMap writes the keys of m at column ind; when the buffer does not end in
// a newline, the first key continues the current line (after "- " or ": ").
func encodeMap(b *bytes.Buffer, m map[string]any, ind int) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if err := checkKeys(keys); err != nil {
		return err
	}
	for i, k := range keys {
		if i > 0 || b.Len() > 0 && b.Bytes()[b.Len()-1] == '\n' {
			indent(b, ind)
		}
		start := b.Len()
		writeString(b, k)
		explicit := b.Len()-start > maxImplicitKey
		if explicit {
			key := string(b.Bytes()[start:])
			b.Truncate(start)
			b.WriteString("? ")
			b.WriteString(key)
			b.WriteByte('\n')
			indent(b, ind)
		}
		b.WriteByte(':')
		if err := encodeValue(b, m[k], ind, explicit); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// checkKeys fails when two keys that are not both valid UTF-8 would be written
// as the same key: YAML holds only Unicode text, so writeString turns every
// invalid byte into U+FFFD.
func checkKeys(sorted []string) error {
	if !slices.ContainsFunc(sorted, func(k string) bool { return !utf8.ValidString(k) }) {
		return nil
	}
	seen := make(map[string]string, len(sorted))
	for _, k := range sorted {
		w := string([]rune(k)) // each invalid byte becomes U+FFFD, as in writeString
		if other, dup := seen[w]; dup {
			return fmt.Errorf("keys %q and %q would both be written as %q: bytes that are not UTF-8 become U+FFFD", other, k, w)
		}
		seen[w] = k
	}
	return nil
}

// encodeList writes the items of l at column ind.
func encodeList(b *bytes.Buffer, l []any, ind int) error {
	for i, item := range l {
		if i > 0 || b.Len() > 0 && b.Bytes()[b.Len()-1] == '\n' {
			indent(b, ind)
		}
		b.WriteByte('-')
		if err := encodeValue(b, item, ind, true); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return nil
}

// encodeValue writes the value after a "key:" or "-" already on the line.
func encodeValue(b *bytes.Buffer, v any, ind int, inList bool) error {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			b.WriteString(" {}\n")
			return nil
		}
		if inList {
			b.WriteByte(' ')
			return encodeMap(b, t, ind+2)
		}
		b.WriteByte('\n')
		return encodeMap(b, t, ind+2)
	case []any:
		if len(t) == 0 {
			b.WriteString(" []\n")
			return nil
		}
		if inList {
			b.WriteByte('\n')
			return encodeList(b, t, ind+2)
		}
		b.WriteByte('\n')
		return encodeList(b, t, ind)
	}
	b.WriteByte(' ')
	if err := writeScalar(b, v); err != nil {
		return err
	}
	b.WriteByte('\n')
	return nil
}

func writeScalar(b *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		writeString(b, t)
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case int:
		b.WriteString(strconv.Itoa(t))
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(t), 10))
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("cannot encode %v", t)
		}
		if t == math.Trunc(t) && math.Abs(t) < 1e15 {
			b.WriteString(strconv.FormatInt(int64(t), 10))
		} else {
			b.WriteString(strconv.FormatFloat(t, 'g', -1, 64))
		}
	default:
		return fmt.Errorf("cannot encode a value of type %T", v)
	}
	return nil
}

// writeString writes s plain when no YAML reader can mistake it, else double-quoted.
func writeString(b *bytes.Buffer, s string) {
	if plainSafe(s) {
		b.WriteString(s)
		return
	}
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\uFFFD`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff || (r > 0x7f && !unicode.IsPrint(r) && r != ' '):
			if r > 0xffff {
				fmt.Fprintf(b, `\U%08X`, r)
			} else {
				fmt.Fprintf(b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// reserved are the words YAML 1.1 or 1.2 reads as booleans or null.
var reserved = map[string]bool{}

// reservedMaxLen is the length of the longest reserved word: a longer scalar
// is not looked up (hashing every long value was most of plainSafe's cost).
var reservedMaxLen int

func init() {
	for _, w := range strings.Fields("y yes n no true false on off null") {
		reserved[w] = true
		reserved[strings.ToUpper(w)] = true
		reserved[strings.ToUpper(w[:1])+w[1:]] = true
	}
	reserved["~"] = true
	for w := range reserved {
		reservedMaxLen = max(reservedMaxLen, len(w))
	}
}

// numberLike matches, once underscores are removed (both readers ignore them in
// numbers), what a YAML 1.1 or 1.2 reader may resolve to a number or a
// timestamp: integers in any base (prefixes in either case; goyaml also takes a
// sign after 0b and 0o), sexagesimal, floats, infinities, NaN and dates.
var numberLike = regexp.MustCompile(`^[-+]?(?:` +
	`0[bB][-+]?[01]+|0[oO][-+]?[0-7]+|0[xX][0-9a-fA-F]+` + // ints with a base prefix
	`|[0-9]+(?::[0-5]?[0-9])*` + // decimal and 0777 octal ints, incl. base 60
	`|[0-9]*\.[0-9.]*(?:[eE][-+]?[0-9]+)?` + // floats with a point
	`|[0-9]+[eE][-+]?[0-9]+` + // floats with only an exponent
	`|[0-9]+(?::[0-5]?[0-9])+\.[0-9]*` + // base-60 floats
	`|\.(?:inf|Inf|INF|nan|NaN|NAN)` +
	`)$|^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}`) // timestamps, whatever follows the date

// mayBeNumber is a cheap first look for plainSafe: a string that starts with a
// digit can only match numberLike if it has a base prefix, looks like a date, or
// holds nothing but digits and the characters of decimal, float and base-60
// notation. It spares the regexp for most hex strings (UUIDs) and quantities.
func mayBeNumber(s string) bool {
	if len(s) > 1 && s[0] == '0' && strings.IndexByte("xXoObB", s[1]) >= 0 {
		return true
	}
	if len(s) > 4 && s[4] == '-' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("0123456789._:+-eE", s[i]) < 0 {
			return false
		}
	}
	return true
}

// plainSafe reports whether s can be written unquoted and read back as the same
// string by any YAML 1.1 or 1.2 reader. It is deliberately conservative: letters,
// digits and _ . / - @ ( ) , anywhere but at the start, single inner spaces, and
// colons not followed by a space.
func plainSafe(s string) bool {
	if s == "" || len(s) <= reservedMaxLen && reserved[s] {
		return false
	}
	c0 := s[0]
	if !(c0 >= 'a' && c0 <= 'z' || c0 >= 'A' && c0 <= 'Z' || c0 >= '0' && c0 <= '9' || c0 == '_' || c0 == '/') {
		return false
	}
	// Only a leading digit lets a reader try a number or a date (sign and dot
	// are not allowed first, and a leading _ keeps a scalar a string).
	if c0 >= '0' && c0 <= '9' {
		if u := strings.ReplaceAll(s, "_", ""); mayBeNumber(u) && numberLike.MatchString(u) {
			return false
		}
	}
	last := len(s) - 1
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
		case c == '_' || c == '.' || c == '/' || c == '-' || c == '@' || c == '(' || c == ')' || c == ',':
		case c == ':':
			if i == last || s[i+1] == ' ' {
				return false
			}
		case c == ' ':
			if i == last || s[i+1] == ' ' || s[i+1] == '#' {
				return false
			}
		default:
			return false
		}
	}
	return true
}
