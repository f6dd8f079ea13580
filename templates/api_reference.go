package templates

// APIReference is the /api page: the portal's OpenAPI document read for
// people.
type APIReference struct {
	Title, Description string
	Operations         []APIOperation
}

// APIOperation is one method on one path.
type APIOperation struct {
	Method, Path, Tag    string
	Summary, Description string
	// Auth names the security schemes that may call it; empty is anyone.
	Auth       []string
	Parameters []APIParameter
	// Bodies are the request body's content types; Fields a JSON body's
	// fields.
	Bodies, Fields []string
	Responses      []APIResponse
}

// APIParameter is one path, query or header parameter.
type APIParameter struct {
	Name, In, Description string
	Required              bool
}

// APIResponse is one status an operation answers.
type APIResponse struct {
	Code, Description string
}

func authWords(schemes []string) string {
	if len(schemes) == 0 {
		return "anyone"
	}
	out := ""
	for i, s := range schemes {
		if i > 0 {
			out += " or "
		}
		switch s {
		case "apiToken":
			out += "an API token (d5_…)"
		case "runnerToken":
			out += "a runner token (d5r_…)"
		default:
			out += s
		}
	}
	return out
}

func operationID(o APIOperation) string {
	id := o.Method + "-"
	for _, r := range o.Path {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			id += string(r)
		default:
			id += "-"
		}
	}
	return id
}
