package version

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"sync"
)

// BuildID is the Go build ID of the running executable, as `go tool
// buildid` prints it: it changes with any change of the code or of the
// toolchain that built it, where Version and the commit may not (a build
// from a tree without its Git history is "dev"). A fingerprint of what the
// tool would write keeps it. "" when it cannot be read.
var BuildID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if id := elfBuildID(exe); id != "" {
		return id
	}
	return markedBuildID(exe)
})

// elfBuildID reads the Go build ID note of an ELF executable.
func elfBuildID(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return ""
	}
	note, err := s.Data()
	// A note: name size, description size, type, then the name ("Go",
	// padded to 4 bytes) and the description, the build ID.
	if err != nil || len(note) < 16 || !bytes.Equal(note[12:16], []byte("Go\x00\x00")) {
		return ""
	}
	n := binary.LittleEndian.Uint32(note[4:8])
	if f.ByteOrder == binary.BigEndian {
		n = binary.BigEndian.Uint32(note[4:8])
	}
	if int(n) > len(note)-16 {
		return ""
	}
	return string(bytes.TrimRight(note[16:16+n], "\x00"))
}

// markedBuildID finds the build ID the linker also writes near the start
// of the text of other executable formats.
func markedBuildID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	const start, end = "\xff Go build ID: \"", "\"\n \xff"
	i := bytes.Index(head[:n], []byte(start))
	if i < 0 {
		return ""
	}
	rest := head[i+len(start) : n]
	j := bytes.Index(rest, []byte(end))
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}
