// Package unreachabletest has the dead ends the tests of bounded runs point
// clients at: a listener that accepts connections and never answers, and an
// address whose port refuses them. Both are on loopback.
package unreachabletest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Silent is a TCP listener on 127.0.0.1 that accepts every connection and
// never writes a byte: a server that hangs.
type Silent struct {
	ln       net.Listener
	accepted atomic.Int32
	mu       sync.Mutex
	conns    []net.Conn
}

// NewSilent starts a Silent listener, closed with its connections when the
// test ends.
func NewSilent(t testing.TB) *Silent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Silent{ln: ln}
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *Silent) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
	}
}

func (s *Silent) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
}

// Addr is host:port of the listener.
func (s *Silent) Addr() string { return s.ln.Addr().String() }

// URL is http://host:port.
func (s *Silent) URL() string { return "http://" + s.Addr() }

// Accepted is how many connections it has accepted.
func (s *Silent) Accepted() int { return int(s.accepted.Load()) }

// Refused returns a loopback host:port where nothing listens: a connection
// to it is refused at once.
func Refused(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
