package gittest

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestCutPushIsRefused: a push whose body ends before its Content-Length
// (a client killed mid-push) is answered 400 and never reaches git.
func TestCutPushIsRefused(t *testing.T) {
	s := NewServer(t)
	s.CreateRepo(t, "tenants.git", "main")
	u, _ := url.Parse(s.URL())
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := fmt.Sprintf("POST /tenants.git/git-receive-pack HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-git-receive-pack-request\r\nContent-Length: 1000\r\n", u.Host)
	r, _ := http.NewRequest(http.MethodPost, s.URL(), nil)
	r.SetBasicAuth(s.User(), s.Password())
	req += "Authorization: " + r.Header.Get("Authorization") + "\r\n\r\n0000"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).CloseWrite() // the body ends 996 bytes early
	// Without the check git waits on the cut body and no answer comes.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a cut push got %d, want 400 before git runs", resp.StatusCode)
	}
}
