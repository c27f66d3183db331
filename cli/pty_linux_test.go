package cli

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal: the CLI writes to tty, which is a
// terminal as a user's is, and the test reads what it shows from out.
func openPTY(t *testing.T) (tty *os.File, out func() string) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Skipf("unlock the pseudo-terminal: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Skipf("name the pseudo-terminal: %v", e)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	var mu sync.Mutex
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			k, err := ptmx.Read(b)
			mu.Lock()
			buf.Write(b[:k])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { tty.Close(); ptmx.Close() })
	return tty, func() string {
		// Closing the terminal ends the reader once it has read everything.
		tty.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return string(bytes.ReplaceAll(buf.Bytes(), []byte("\r\n"), []byte("\n")))
	}
}
