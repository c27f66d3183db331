package waldur

// validJSON reports whether b is one valid JSON value, as json.Valid does:
// the same grammar, the same nesting limit, and like it no check of UTF-8.
// It exists because a page is validated before it is cut into records
// (splitArray), and encoding/json's scanner, one function call per byte,
// was a tenth of a no-op's read (BENCHMARKS.md, "A no-op sync as a CronJob
// starts it"); TestValidJSONMatchesStdlib holds it to json.Valid.
func validJSON(b []byte) bool {
	ok, _ := validCount(b)
	return ok
}

// validCount is validJSON that also counts the values directly inside the
// outermost container: a page's records, for splitArray to hold them in
// one allocation.
func validCount(b []byte) (ok bool, n int) {
	var stack []byte // '{' or '[' of each open container
	i := skipSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false, 0
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxJSONDepth {
				return false, 0
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']': empty
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = objectKey(b, i); i < 0 {
					return false, 0
				}
			}
			continue
		case c == '"':
			if i = scanString(b, i); i < 0 {
				return false, 0
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = scanNumber(b, i); i < 0 {
				return false, 0
			}
		default:
			if i = scanLiteral(b, i); i < 0 {
				return false, 0
			}
		}
		// A value ended at b[i]: close containers, or go on after a comma.
		if len(stack) == 1 {
			n++
		}
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b), n
			}
			if i >= len(b) {
				return false, 0
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				if len(stack) == 1 {
					n++
				}
				continue
			}
			if b[i] != ',' {
				return false, 0
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i = objectKey(b, i); i < 0 {
					return false, 0
				}
			}
			break
		}
	}
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// objectKey scans `"key" :` at b[i] and returns the index of the value after
// it, or -1.
func objectKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = scanString(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// scanString scans the string starting at b[i] and returns the index after
// it, or -1.
func scanString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i]
// and returns the index after it, or -1.
func scanNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i
}

// scanLiteral scans true, false or null at b[i] and returns the index after
// it, or -1.
func scanLiteral(b []byte, i int) int {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit)
		}
	}
	return -1
}
