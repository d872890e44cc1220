package quote

import "fmt"

// JSONType names the JSON type of a decoded value for a message ("must be an object, got a list"): the
// chain's spec parser and the NBI's body reader word a caller's mistake the same way.
func JSONType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int32, int64, float32, float64, interface{ Float64() (float64, error) }: // json.Number too
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
