package gitsync

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// packBatch is how many objects are compressed before they are written, which
// bounds the memory the compressed copies take.
const packBatch = 2048

// writePack writes a version 2 packfile (gitformat-pack(5)) holding the
// objects, each whole (no deltas) and compressed at zlib's fastest level, the
// compression spread over every CPU. The objects are mostly small YAML files
// the server has never seen, so a delta search would cost more time than it
// saves bytes; the server's next gc packs them tightly.
func writePack(w io.Writer, s storer.EncodedObjectStorer, hashes []plumbing.Hash) error {
	sum := sha1.New()
	out := io.MultiWriter(w, sum)
	var hdr [12]byte
	copy(hdr[:4], "PACK")
	binary.BigEndian.PutUint32(hdr[4:8], 2)
	binary.BigEndian.PutUint32(hdr[8:12], uint32(len(hashes)))
	if _, err := out.Write(hdr[:]); err != nil {
		return err
	}
	workers := runtime.GOMAXPROCS(0)
	entries := make([][]byte, min(packBatch, len(hashes)))
	errs := make([]error, workers)
	for start := 0; start < len(hashes); start += packBatch {
		batch := hashes[start:min(start+packBatch, len(hashes))]
		var wg sync.WaitGroup
		for k := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var buf bytes.Buffer
				zw, _ := zlib.NewWriterLevel(&buf, zlib.BestSpeed)
				for i := k; i < len(batch); i += workers {
					e, err := packEntry(s, batch[i], &buf, zw)
					if err != nil {
						errs[k] = err
						return
					}
					entries[i] = e
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		for i := range batch {
			if _, err := out.Write(entries[i]); err != nil {
				return err
			}
			entries[i] = nil
		}
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// packEntry encodes one object: the type and size header, then the zlib
// stream of its contents.
func packEntry(s storer.EncodedObjectStorer, h plumbing.Hash, buf *bytes.Buffer, zw *zlib.Writer) ([]byte, error) {
	obj, err := s.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", h, err)
	}
	typ := obj.Type()
	if typ < plumbing.CommitObject || typ > plumbing.TagObject {
		return nil, fmt.Errorf("pack %s: cannot pack a %s", h, typ)
	}
	buf.Reset()
	size := uint64(obj.Size())
	c := byte(typ)<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		buf.WriteByte(c | 0x80)
		c, size = byte(size&0x7f), size>>7
	}
	buf.WriteByte(c)
	zw.Reset(buf)
	r, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", h, err)
	}
	_, err = io.Copy(zw, r)
	_ = r.Close()
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", h, err)
	}
	return bytes.Clone(buf.Bytes()), nil
}
