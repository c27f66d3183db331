package show

import (
	"bytes"
	"io"
	"sync"
)

// LineSink is a writer (stderr) that the logs and the progress share: each
// writes through a Writer of its own, and whole lines reach the sink's
// writer one at a time, so neither cuts into the other's lines.
type LineSink struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLineSink shares w.
func NewLineSink(w io.Writer) *LineSink { return &LineSink{w: w} }

// Writer is a new writer into the sink.
func (s *LineSink) Writer() io.Writer { return &lineWriter{sink: s} }

// Underlying is the writer a sink's Writer writes to, or w itself.
func Underlying(w io.Writer) io.Writer {
	if l, ok := w.(*lineWriter); ok {
		return l.sink.w
	}
	return w
}

// lineWriter keeps one writer's unfinished line until its newline and
// passes each finished line to the sink.
type lineWriter struct {
	mu   sync.Mutex
	sink *LineSink
	buf  []byte
}

// Write keeps p and passes on every line it finishes.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	end := bytes.LastIndexByte(l.buf, '\n')
	if end < 0 {
		return len(p), nil
	}
	l.sink.mu.Lock()
	_, err := l.sink.w.Write(l.buf[:end+1])
	l.sink.mu.Unlock()
	l.buf = l.buf[:copy(l.buf, l.buf[end+1:])]
	return len(p), err
}
