package render

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
)

// TestDigestCoversEveryField: changing any one field of a resource, an
// order, a team member or an offering user changes the digest, so a field
// added to a Waldur type is never left out of what decides a re-render.
func TestDigestCoversEveryField(t *testing.T) {
	h := newHasher(NewMemory(nil).seeds)
	for _, zero := range []any{waldur.Resource{}, waldur.Order{}, waldur.TeamMember{}, waldur.OfferingUser{}, waldur.ServiceAccount{}, waldur.CourseAccount{}, QuotaHold{}} {
		typ := reflect.TypeOf(zero)
		t.Run(typ.Name(), func(t *testing.T) {
			h.add(zero)
			base := h.sum()
			for i := range typ.NumField() {
				v := reflect.New(typ).Elem()
				f := v.Field(i)
				if !setSome(f) {
					t.Fatalf("field %s: the test cannot set a %s", typ.Field(i).Name, f.Type())
				}
				h.add(v.Interface())
				if h.sum() == base {
					t.Errorf("field %s does not change the digest", typ.Field(i).Name)
				}
			}
		})
	}
}

// setSome gives v a value other than its zero one.
func setSome(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
			return true
		}
		return v.NumField() > 0 && setSome(v.Field(0))
	default:
		return false
	}
	return true
}

// TestRememberedTenantsShareTheTreeInPlace: a tenant taken from the memory
// holds the bytes of the tree in place now (fetched since, written by
// someone else), not a second copy of them.
func TestRememberedTenantsShareTheTreeInPlace(t *testing.T) {
	cfg, st, _ := example(t)
	tpls, err := LoadTemplates(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var cur Tree
	r := New(cfg, tpls).SharingWith(func() Tree { return cur }).Remembering(NewMemory(nil))
	first, err := r.Render(st)
	if err != nil {
		t.Fatal(err)
	}
	cur = Tree{}
	for p, data := range first.Tree(nil) {
		cur[p] = bytes.Clone(data) // equal bytes, another copy
	}
	again, err := r.Render(st)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(again.Tenants); n == 0 {
		t.Fatal("no tenants")
	}
	for _, tn := range again.Tenants {
		for _, f := range tn.Files {
			if in := cur[tn.Dir+"/"+f.Name]; &in[0] != &f.Data[0] {
				t.Fatalf("%s/%s holds its own copy, not the tree's", tn.Dir, f.Name)
			}
		}
	}
}
