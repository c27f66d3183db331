package keycloak

import (
	"crypto/rand"
	"fmt"
	"testing"
	"time"
)

// BenchmarkStateSize (BENCHMARKS.md, "Keycloak memory by default"): the
// encoded size of a memory of N groups shaped as BenchmarkKeycloak's world
// (5 members each, from a pool of 20,000 users with random UUIDs, the
// marker attributes of a namespace group), and the time to encode and
// decode it.
//
//	go test ./keycloak -run '^$' -bench BenchmarkStateSize -benchtime 3x
func BenchmarkStateSize(b *testing.B) {
	users := make([]User, 20000)
	for i := range users {
		users[i] = User{ID: randomID(), Username: fmt.Sprintf("user%05d", i)}
	}
	for _, n := range []int{1000, 10000, 30000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
			r := &realmMemory{Key: "k", URL: "https://sso.example.org", Realm: "waldur", LastPass: at, Groups: map[string]*memGroup{}}
			for i := range n {
				t, role := i/3, []string{"admin", "readwrite", "readonly"}[i%3]
				g := &memGroup{ID: randomID(), Name: fmt.Sprintf("ns_t%05d_%s", t, role), MembersRead: true, ChildrenRead: true,
					Attributes: map[string][]string{AttrManagedBy: {ManagedBy}, AttrOffering: {"0ff00000000040008000000000000001"},
						AttrResource: {fmt.Sprintf("a0000000000040008000%012d", t)}, AttrDescription: {fmt.Sprintf("Namespace t%d %s access", t, role)}},
					Verified: at.Add(time.Duration(i) * time.Second)}
				for m := range 5 {
					g.Members = append(g.Members, users[(i*5+m)%len(users)])
				}
				r.Groups["/"+g.Name] = g
			}
			f := stateFile{Realms: []*realmMemory{r}}
			var size int
			var enc, dec time.Duration
			for range b.N {
				start := time.Now()
				data, err := encodeState(f)
				enc += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				start = time.Now()
				if _, err := decodeState(data); err != nil {
					b.Fatal(err)
				}
				dec += time.Since(start)
				size = len(data)
			}
			b.ReportMetric(float64(size), "bytes")
			b.ReportMetric(float64(size)/float64(n), "bytes/group")
			b.ReportMetric(enc.Seconds()*1000/float64(b.N), "encode-ms")
			b.ReportMetric(dec.Seconds()*1000/float64(b.N), "decode-ms")
		})
	}
}

// randomID is a random id shaped as Keycloak's (a UUID).
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
