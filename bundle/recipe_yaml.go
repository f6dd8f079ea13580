package bundle

import (
	"bytes"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"time"

	d5list "github.com/deep500/d5list"
	"gopkg.in/yaml.v3"
)

var yamlErrLine = regexp.MustCompile(`line (\d+)`)

var recipeKeys = map[string]bool{"fixed": true, "mutable": true, "metrics": true, "entrypoint": true, "image": true}

func (p *recipeParse) parseYAML(data []byte) d5list.Recipe {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			p.errorf(0, "empty recipe")
		} else {
			p.yamlErr(err)
		}
		return d5list.Recipe{}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			p.yamlErr(err)
		} else {
			p.errorf(extra.Line, "more than one YAML document; a recipe is one mapping")
		}
		return d5list.Recipe{}
	}
	c := &yamlConv{p: p}
	root := c.convert(&doc, 0)
	if root == nil {
		return d5list.Recipe{}
	}
	return p.buildRoot(root, "a mapping")
}

func (p *recipeParse) yamlErr(err error) {
	line := 0
	if m := yamlErrLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		p.errorf(line, "%s", te.Errors[0])
		return
	}
	p.errorf(line, "invalid YAML: %v", err)
}

// yamlConv turns yaml.v3 nodes into recipe nodes, expanding aliases under
// a node budget so that an alias bomb stops early.
type yamlConv struct {
	p     *recipeParse
	nodes int
}

func (c *yamlConv) convert(y *yaml.Node, depth int) *node {
	c.nodes++
	if c.nodes > maxNodes {
		if c.nodes == maxNodes+1 {
			c.p.errorf(y.Line, "the recipe expands to more than %d values (aliases?)", maxNodes)
		}
		return nil
	}
	if depth > maxDepth {
		c.p.errorf(y.Line, "nested deeper than %d levels", maxDepth)
		return nil
	}
	switch y.Kind {
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			c.p.errorf(y.Line, "empty recipe")
			return nil
		}
		return c.convert(y.Content[0], depth)
	case yaml.AliasNode:
		if y.Alias == nil {
			c.p.errorf(y.Line, "unknown alias")
			return nil
		}
		return c.convert(y.Alias, depth+1)
	case yaml.SequenceNode:
		n := &node{kind: nList, line: y.Line, items: []*node{}}
		for _, it := range y.Content {
			v := c.convert(it, depth+1)
			if v == nil {
				return nil
			}
			n.items = append(n.items, v)
		}
		return n
	case yaml.MappingNode:
		n := &node{kind: nMap, line: y.Line}
		seen := map[string]int{}
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				if !c.merge(n, seen, v, depth) {
					return nil
				}
				continue
			}
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				c.p.errorf(k.Line, "mapping keys must be strings")
				return nil
			}
			val := c.convert(v, depth+1)
			if val == nil {
				return nil
			}
			if prev, dup := seen[k.Value]; dup {
				if prev >= 0 {
					c.p.errorf(k.Line, "key %q given twice (also on line %d)", k.Value, prev)
					return nil
				}
				// A key from a << merge is overridden by the mapping's own.
				for j := range n.keys {
					if n.keys[j] == k.Value {
						n.vals[j] = val
					}
				}
				seen[k.Value] = k.Line
				continue
			}
			seen[k.Value] = k.Line
			n.keys = append(n.keys, k.Value)
			n.vals = append(n.vals, val)
		}
		return n
	case yaml.ScalarNode:
		return c.scalar(y)
	}
	c.p.errorf(y.Line, "unsupported YAML node")
	return nil
}

// merge applies a YAML merge key (<<: *defaults): keys not given in the
// mapping itself come from the merged mapping(s).
func (c *yamlConv) merge(n *node, seen map[string]int, v *yaml.Node, depth int) bool {
	src := c.convert(v, depth+1)
	if src == nil {
		return false
	}
	var maps []*node
	switch src.kind {
	case nMap:
		maps = []*node{src}
	case nList:
		maps = src.items
	}
	for _, m := range maps {
		if m.kind != nMap {
			c.p.errorf(v.Line, "<< merges mappings only")
			return false
		}
		for i, k := range m.keys {
			if _, ok := seen[k]; ok {
				continue
			}
			seen[k] = -1
			n.keys = append(n.keys, k)
			n.vals = append(n.vals, m.vals[i])
		}
	}
	return true
}

func (c *yamlConv) scalar(y *yaml.Node) *node {
	n := &node{kind: nScalar, line: y.Line}
	switch y.Tag {
	case "!!str", "!!null", "!!bool", "!!int", "!!float", "!!timestamp":
	default:
		c.p.errorf(y.Line, "unsupported YAML tag %s", y.Tag)
		return nil
	}
	if y.Tag == "!!str" || y.Tag == "!!timestamp" {
		n.scalar = y.Value // dates stay text, as in JSON
		return n
	}
	var v any
	if err := y.Decode(&v); err != nil {
		c.p.errorf(y.Line, "%v", err)
		return nil
	}
	switch v := v.(type) {
	case nil, bool, string, float64:
		n.scalar = v
	case int:
		n.scalar = int64(v)
	case int64:
		n.scalar = v
	case uint64:
		c.p.errorf(y.Line, "integer %s out of range", y.Value)
		return nil
	case time.Time:
		n.scalar = y.Value
	default:
		c.p.errorf(y.Line, "unsupported value %q", y.Value)
		return nil
	}
	if f, ok := n.scalar.(float64); ok && y.Tag == "!!int" && f == math.Trunc(f) {
		c.p.errorf(y.Line, "integer %s out of range", y.Value)
		return nil
	}
	return n
}
