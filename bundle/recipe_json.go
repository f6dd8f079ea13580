package bundle

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
)

func (p *recipeParse) parseJSON(data []byte) d5list.Recipe {
	c := &jsonConv{p: p, data: data, li: newLineIndex(data)}
	c.dec = json.NewDecoder(bytes.NewReader(data))
	c.dec.UseNumber()
	root := c.value(0)
	if root == nil {
		return d5list.Recipe{}
	}
	if _, err := c.dec.Token(); err != io.EOF {
		p.errorf(c.line(), "data after the recipe object")
		return d5list.Recipe{}
	}
	return p.buildRoot(root, "an object")
}

// jsonConv builds nodes from the JSON token stream, which gives every value
// its line and lets duplicate keys be refused (encoding/json keeps the last).
type jsonConv struct {
	p    *recipeParse
	dec  *json.Decoder
	data []byte
	li   lineIndex
}

func (c *jsonConv) line() int { return c.li.line(skipSpace(c.data, c.dec.InputOffset())) }

func (c *jsonConv) fail(err error) *node {
	if err == io.EOF {
		c.p.errorf(c.line(), "unexpected end of JSON")
		return nil
	}
	c.p.rs.merge(jsonErr(c.p.file, c.li, c.dec, err), CodeRecipe, c.p.file)
	for i := range c.p.rs.list {
		c.p.rs.list[i].Code = CodeRecipe
	}
	return nil
}

func (c *jsonConv) value(depth int) *node {
	if depth > maxDepth {
		c.p.errorf(c.line(), "nested deeper than %d levels", maxDepth)
		return nil
	}
	line := c.line()
	tok, err := c.dec.Token()
	if err != nil {
		return c.fail(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			n := &node{kind: nList, line: line, items: []*node{}}
			for c.dec.More() {
				v := c.value(depth + 1)
				if v == nil {
					return nil
				}
				n.items = append(n.items, v)
			}
			if _, err := c.dec.Token(); err != nil {
				return c.fail(err)
			}
			return n
		case '{':
			n := &node{kind: nMap, line: line}
			seen := map[string]int{}
			for c.dec.More() {
				kline := c.line()
				kt, err := c.dec.Token()
				if err != nil {
					return c.fail(err)
				}
				k, _ := kt.(string)
				if prev, dup := seen[k]; dup {
					c.p.errorf(kline, "key %q given twice (also on line %d)", k, prev)
					return nil
				}
				seen[k] = kline
				v := c.value(depth + 1)
				if v == nil {
					return nil
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, v)
			}
			if _, err := c.dec.Token(); err != nil {
				return c.fail(err)
			}
			return n
		}
	case json.Number:
		s := t.String()
		if strings.ContainsAny(s, ".eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				c.p.errorf(line, "number %s out of range", s)
				return nil
			}
			return &node{kind: nScalar, line: line, scalar: f}
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			c.p.errorf(line, "integer %s out of range", s)
			return nil
		}
		return &node{kind: nScalar, line: line, scalar: i}
	case string, bool, nil:
		return &node{kind: nScalar, line: line, scalar: t}
	}
	c.p.errorf(line, "unexpected JSON token %v", tok)
	return nil
}
