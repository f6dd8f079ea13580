package handlers

import (
	_ "embed"
	"net/http"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// openAPI is the portal's API as an OpenAPI 3.1 document, kept beside the
// handlers it describes; web's TestAPIReferenceCoversTheRoutes holds it to
// the route table.
//
//go:embed openapi.yaml
var openAPI []byte

// OpenAPIDocument is GET /api/openapi.yaml: the document itself, for
// client generators and API browsers.
func (h *Handler) OpenAPIDocument(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(openAPI)
}

// APIReferencePage is GET /api: the document as a page people read.
func (h *Handler) APIReferencePage(w http.ResponseWriter, r *http.Request) {
	ref, err := APIReference()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.APIReferencePage(ref))
}

// The parts of an OpenAPI document the reference page shows.
type openAPIDoc struct {
	Info struct {
		Title       string `yaml:"title"`
		Description string `yaml:"description"`
	} `yaml:"info"`
	Paths      map[string]map[string]openAPIOperation `yaml:"paths"`
	Components struct {
		Parameters map[string]openAPIParameter `yaml:"parameters"`
	} `yaml:"components"`
}

type openAPIOperation struct {
	Tags        []string              `yaml:"tags"`
	Summary     string                `yaml:"summary"`
	Description string                `yaml:"description"`
	Security    []map[string][]string `yaml:"security"`
	Parameters  []openAPIParameter    `yaml:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schema"`
		} `yaml:"content"`
	} `yaml:"requestBody"`
	Responses map[string]struct {
		Ref         string `yaml:"$ref"`
		Description string `yaml:"description"`
	} `yaml:"responses"`
}

type openAPIParameter struct {
	Ref         string `yaml:"$ref"`
	Name        string `yaml:"name"`
	In          string `yaml:"in"`
	Required    bool   `yaml:"required"`
	Description string `yaml:"description"`
}

// APIReference reads the embedded document into the page's operations,
// in path order.
func APIReference() (templates.APIReference, error) {
	var doc openAPIDoc
	if err := yaml.Unmarshal(openAPI, &doc); err != nil {
		return templates.APIReference{}, d5list.Errorf(d5list.EINTERNAL, "openapi.yaml: %v", err)
	}
	ref := templates.APIReference{Title: doc.Info.Title, Description: doc.Info.Description}
	paths := make([]string, 0, len(doc.Paths))
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		methods := make([]string, 0, len(doc.Paths[path]))
		for m := range doc.Paths[path] {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, m := range methods {
			op := doc.Paths[path][m]
			o := templates.APIOperation{Method: strings.ToUpper(m), Path: path, Summary: op.Summary, Description: op.Description}
			if len(op.Tags) > 0 {
				o.Tag = op.Tags[0]
			}
			for _, s := range op.Security {
				for name := range s {
					o.Auth = append(o.Auth, name)
				}
			}
			slices.Sort(o.Auth)
			for _, p := range op.Parameters {
				if p.Ref != "" {
					p = doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
				}
				o.Parameters = append(o.Parameters, templates.APIParameter{Name: p.Name, In: p.In, Required: p.Required, Description: p.Description})
			}
			if op.RequestBody != nil {
				for ct, c := range op.RequestBody.Content {
					o.Bodies = append(o.Bodies, ct)
					for field := range c.Schema.Properties {
						o.Fields = append(o.Fields, field)
					}
				}
				slices.Sort(o.Bodies)
				slices.Sort(o.Fields)
				o.Fields = slices.Compact(o.Fields)
			}
			codes := make([]string, 0, len(op.Responses))
			for code := range op.Responses {
				codes = append(codes, code)
			}
			sort.Strings(codes)
			for _, code := range codes {
				desc := op.Responses[code].Description
				if op.Responses[code].Ref != "" {
					desc = "an error, with the reasons"
				}
				o.Responses = append(o.Responses, templates.APIResponse{Code: code, Description: desc})
			}
			ref.Operations = append(ref.Operations, o)
		}
	}
	return ref, nil
}
