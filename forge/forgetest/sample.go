package forgetest

import (
	"github.com/getkin/kin-openapi/openapi3"
)

// sample builds the smallest value a schema accepts: every required property
// present, nullable ones null, the first enum value or alternative. The
// stand-in starts each answer from it and sets the fields it keeps, so its
// answers carry what the published description requires of the real service.
func sample(ref *openapi3.SchemaRef, depth int) any {
	if ref == nil || ref.Value == nil || depth > 12 {
		return nil
	}
	s := ref.Value
	if len(s.AllOf) > 0 {
		out := map[string]any{}
		for _, part := range s.AllOf {
			if m, ok := sample(part, depth+1).(map[string]any); ok {
				for k, v := range m {
					out[k] = v
				}
			}
		}
		return out
	}
	if len(s.OneOf) > 0 {
		return sample(s.OneOf[0], depth+1)
	}
	if len(s.AnyOf) > 0 {
		return sample(s.AnyOf[0], depth+1)
	}
	if s.Nullable {
		return nil
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch {
	case s.Type.Is(openapi3.TypeObject) || (s.Type == nil && len(s.Properties) > 0):
		out := map[string]any{}
		for _, name := range s.Required {
			out[name] = sample(s.Properties[name], depth+1)
		}
		return out
	case s.Type.Is(openapi3.TypeArray):
		return []any{}
	case s.Type.Is(openapi3.TypeInteger), s.Type.Is(openapi3.TypeNumber):
		return 1
	case s.Type.Is(openapi3.TypeBoolean):
		return false
	case s.Type.Is(openapi3.TypeString):
		switch s.Format {
		case "date-time":
			return "2026-01-01T00:00:00Z"
		case "uri", "url":
			return "https://forge.invalid/x"
		case "email":
			return "someone@forge.invalid"
		}
		return "x"
	}
	return nil
}
