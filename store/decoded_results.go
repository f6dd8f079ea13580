package store

import (
	"reflect"
	"sync"

	d5list "github.com/deep500/d5list"
)

// decodedResults keeps claimed and measured results decoded from their
// stored bytes, keyed by those bytes, so that a kept result is right by
// construction: a result written again is a different key. A board's
// charts read the runs of its ten best entries after every change:
// reading those submissions was two fifths of what the charts cost, most
// of it decoding the same unchanged results (Zstandard, then JSON).
type decodedResults struct {
	mu    sync.RWMutex
	m     map[string]*d5list.Result
	bytes int // of the stored results kept, len of m's keys
}

// The kept results are bounded in number and in stored bytes (a decoded
// result holds several times its compressed bytes): the charted entries
// of every board and the submissions being read fit, and a result stored
// larger than maxDecodedResultBytes (an operator benchmark's shapes, a
// long audit) is decoded each time instead of kept.
const (
	maxDecodedResults     = 1024
	maxDecodedBytes       = 2 << 20
	maxDecodedResultBytes = 16 << 10
)

// decode returns the result raw encodes, a copy of its own that shares no
// memory with the kept one: callers may change it. A nil c decodes
// without keeping.
func (c *decodedResults) decode(raw string) (*d5list.Result, error) {
	if c == nil {
		return decodeResult(raw)
	}
	c.mu.RLock()
	kept, ok := c.m[raw]
	c.mu.RUnlock()
	if ok {
		return deepCopy(kept), nil
	}
	r, err := decodeResult(raw)
	if err != nil || len(raw) > maxDecodedResultBytes {
		return r, err
	}
	keep := deepCopy(r)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]*d5list.Result)
	}
	if _, ok := c.m[raw]; !ok {
		if len(c.m) >= maxDecodedResults || c.bytes+len(raw) > maxDecodedBytes {
			// Map order is random: a random quarter goes.
			for k := range c.m {
				if len(c.m) <= maxDecodedResults*3/4 && c.bytes+len(raw) <= maxDecodedBytes*3/4 {
					break
				}
				delete(c.m, k)
				c.bytes -= len(k)
			}
		}
		c.m[raw] = keep
		c.bytes += len(raw)
	}
	c.mu.Unlock()
	return r, nil
}

// deepCopy copies v and everything it points to, so that the copy shares
// no memory with it. It walks the value by reflection, so that a field
// added to a result later is copied too; d5list's types have no
// unexported fields, which reflection cannot set.
func deepCopy[T any](v *T) *T {
	out := new(T)
	copyValue(reflect.ValueOf(out).Elem(), reflect.ValueOf(v).Elem())
	return out
}

func copyValue(dst, src reflect.Value) {
	if flat(src.Type()) {
		dst.Set(src)
		return
	}
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		if flat(src.Type().Elem()) {
			reflect.Copy(s, src)
		} else {
			for i := range src.Len() {
				copyValue(s.Index(i), src.Index(i))
			}
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			k := reflect.New(src.Type().Key()).Elem()
			copyValue(k, it.Key())
			val := reflect.New(src.Type().Elem()).Elem()
			copyValue(val, it.Value())
			m.SetMapIndex(k, val)
		}
		dst.Set(m)
	case reflect.Struct:
		for i := range src.NumField() {
			if !dst.Field(i).CanSet() {
				// A struct of another package with fields of its own
				// (time.Time) is copied as a value, as its package
				// copies it.
				dst.Set(src)
				return
			}
		}
		for i := range src.NumField() {
			copyValue(dst.Field(i), src.Field(i))
		}
	case reflect.Array:
		for i := range src.Len() {
			copyValue(dst.Index(i), src.Index(i))
		}
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		c := reflect.New(src.Elem().Type()).Elem()
		copyValue(c, src.Elem())
		dst.Set(c)
	default:
		dst.Set(src)
	}
}

// flatTypes memoizes flat.
var flatTypes sync.Map // reflect.Type -> bool

// flat reports whether a value of t holds no pointer, slice, map or
// interface, so that assigning it copies it whole (strings are immutable
// and may be shared).
func flat(t reflect.Type) bool {
	if f, ok := flatTypes.Load(t); ok {
		return f.(bool)
	}
	var f bool
	switch t.Kind() {
	case reflect.Struct:
		f = true
		for i := range t.NumField() {
			f = f && flat(t.Field(i).Type)
		}
	case reflect.Array:
		f = flat(t.Elem())
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		f = false
	default:
		f = true
	}
	flatTypes.Store(t, f)
	return f
}
