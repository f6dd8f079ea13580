package verifier

import (
	"encoding/json"
	"math"
	"reflect"

	d5list "github.com/deep500/d5list"
)

// EqualValues compares recipe values the way a person reads them: numbers
// by value whatever their Go type (int, int64, float64, json.Number, as
// YAML, JSON and the Python recipe parser give different ones), maps and
// slices deeply, d5list.Symbol by its fields. nil equals only nil.
func EqualValues(a, b any) bool {
	// Integers beyond 2^53 (seeds, sample counts) compare exactly.
	if ia, ok := integer(a); ok {
		if ib, ok := integer(b); ok {
			return ia == ib
		}
	}
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && (fa == fb || math.IsNaN(fa) && math.IsNaN(fb))
	}
	if _, ok := number(b); ok {
		return false
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case d5list.Symbol:
		return equalSymbol(x, b)
	case *d5list.Symbol:
		if x == nil {
			return b == nil
		}
		return equalSymbol(*x, b)
	}
	ma, aIsMap := asMap(a)
	mb, bIsMap := asMap(b)
	if aIsMap || bIsMap {
		if !aIsMap || !bIsMap || len(ma) != len(mb) {
			return false
		}
		for k, va := range ma {
			vb, ok := mb[k]
			if !ok || !EqualValues(va, vb) {
				return false
			}
		}
		return true
	}
	sa, aIsSlice := asSlice(a)
	sb, bIsSlice := asSlice(b)
	if aIsSlice || bIsSlice {
		if !aIsSlice || !bIsSlice || len(sa) != len(sb) {
			return false
		}
		for i := range sa {
			if !EqualValues(sa[i], sb[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

func equalSymbol(x d5list.Symbol, b any) bool {
	var y d5list.Symbol
	switch v := b.(type) {
	case d5list.Symbol:
		y = v
	case *d5list.Symbol:
		if v == nil {
			return false
		}
		y = *v
	default:
		return false
	}
	// A symbol without arguments is the same whether or not the parser
	// kept empty containers.
	return x.Name == y.Name && x.Call == y.Call &&
		(len(x.Args) == 0 && len(y.Args) == 0 || EqualValues(x.Args, y.Args)) &&
		(len(x.Kwargs) == 0 && len(y.Kwargs) == 0 || EqualValues(x.Kwargs, y.Kwargs))
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// asMap accepts map[string]any and map[any]any (what some YAML decoders
// produce) and turns the latter's keys into strings when they are strings.
func asMap(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case map[string]any:
		return x, true
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, false
			}
			m[ks] = e
		}
		return m, true
	}
	return nil, false
}

func asSlice(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case nil:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	}
	return 0, false
}
