package store

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// A kept result is handed out as a copy that shares no memory with it or
// with any other copy, every field included (filled by reflection, so a
// field added later is covered), and is what decoding the bytes gives.
func TestDecodedResultsAreCopiesOfTheirOwn(t *testing.T) {
	var want d5list.Result
	n := 0
	fill(reflect.ValueOf(&want).Elem(), &n)
	stored, err := encodeResult(&want)
	if err != nil {
		t.Fatal(err)
	}
	raw := string(stored.([]byte))
	plain, err := decodeResult(raw)
	if err != nil {
		t.Fatal(err)
	}
	var kept decodedResults
	first, err := kept.decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	second, err := kept.decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []*d5list.Result{first, second} {
		if !reflect.DeepEqual(r, plain) {
			t.Fatalf("decode %d through the kept results: %+v, want %+v", i+1, r, plain)
		}
	}
	if len(first.Runs) == 0 || first.Runs[0].Clock == nil || first.Runs[0].Clock.Audit == nil || len(first.Runs[0].Evals) == 0 {
		t.Fatalf("the filled result lost its runs' parts in the round trip: %+v", first)
	}
	seen := map[uintptr]string{}
	addresses(reflect.ValueOf(first), "first", seen)
	addresses(reflect.ValueOf(kept.m[raw]), "kept", seen)
	if shared := addresses(reflect.ValueOf(second), "second", seen); shared != "" {
		t.Fatal(shared)
	}
	first.Runs[0].Evals[0].Accuracy = -1
	first.Runs[0].Clock.Audit.Sections[0].Checked[0] = -1
	if third, _ := kept.decode(raw); !reflect.DeepEqual(third, plain) {
		t.Fatalf("a change to a handed-out copy reached the kept result: %+v", third)
	}
}

// fill sets every field v holds to a value of its own, allocating what it
// points to: two elements to each slice and map.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, n)
			fill(e, n)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n))
	case reflect.Float64, reflect.Float32:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	}
}

// addresses records the memory each pointer, slice and map in v refers
// to under name, and says where v shares any with an earlier name.
func addresses(v reflect.Value, name string, seen map[uintptr]string) string {
	mark := func(p uintptr) string {
		if other, ok := seen[p]; ok && other != name {
			return fmt.Sprintf("%s and %s share memory at %#x (%s)", name, other, p, v.Type())
		}
		seen[p] = name
		return ""
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		if s := mark(v.Pointer()); s != "" {
			return s
		}
		return addresses(v.Elem(), name, seen)
	case reflect.Slice:
		if v.Cap() > 0 {
			if s := mark(v.Pointer()); s != "" {
				return s
			}
		}
		for i := range v.Len() {
			if s := addresses(v.Index(i), name, seen); s != "" {
				return s
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return ""
		}
		if s := mark(v.Pointer()); s != "" {
			return s
		}
		for it := v.MapRange(); it.Next(); {
			if s := addresses(it.Value(), name, seen); s != "" {
				return s
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if s := addresses(v.Field(i), name, seen); s != "" {
				return s
			}
		}
	}
	return ""
}

// The kept results stay within their bounds in number and in stored
// bytes, and a result stored larger than a kept one may be is decoded
// right each time, never kept.
func TestDecodedResultsAreBounded(t *testing.T) {
	var kept decodedResults
	encode := func(r *d5list.Result) string {
		t.Helper()
		stored, err := encodeResult(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(stored.([]byte))
	}
	for i := range maxDecodedResults + maxDecodedResults/2 {
		r := fiveRunResult()
		r.Runs[0].Seed = int64(i)
		if _, err := kept.decode(encode(r)); err != nil {
			t.Fatal(err)
		}
		sum := 0
		for k := range kept.m {
			sum += len(k)
		}
		if len(kept.m) > maxDecodedResults || kept.bytes > maxDecodedBytes || kept.bytes != sum {
			t.Fatalf("after %d results: %d kept, %d bytes counted, %d held; bounds %d and %d", i+1, len(kept.m), kept.bytes, sum, maxDecodedResults, maxDecodedBytes)
		}
	}
	big := fiveRunResult()
	for i := range 4000 {
		big.Runs[0].Evals = append(big.Runs[0].Evals, d5list.EvalPoint{Epoch: float64(i), Seconds: float64(i) * 1.37e-3, Accuracy: 1 / float64(i+3)})
	}
	raw := encode(big)
	if len(raw) <= maxDecodedResultBytes {
		t.Fatalf("the large result is stored in %d bytes, not over %d", len(raw), maxDecodedResultBytes)
	}
	want, err := decodeResult(raw)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := kept.decode(raw)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("the large result decoded through the kept ones: %v", err)
		}
	}
	if _, ok := kept.m[raw]; ok {
		t.Fatal("a result stored in more than maxDecodedResultBytes was kept")
	}
}

// A struct with fields of its own package's, as time.Time, is copied as
// a value rather than refused.
func TestDeepCopyCopiesStructsWithUnexportedFields(t *testing.T) {
	type stamped struct {
		At   time.Time
		Runs []d5list.EvalPoint
	}
	v := &stamped{At: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Runs: []d5list.EvalPoint{{Epoch: 1}}}
	c := deepCopy(v)
	if !c.At.Equal(v.At) || len(c.Runs) != 1 || &c.Runs[0] == &v.Runs[0] {
		t.Fatalf("copy %+v of %+v", c, v)
	}
}
