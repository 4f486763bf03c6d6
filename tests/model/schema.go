package model

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	yamlv2 "gopkg.in/yaml.v2"
)

// parseActionArgs turns `juju run` key=value arguments into the action's parameters as Juju
// does (cmd/juju/action/run.go): each value is parsed as YAML with gopkg.in/yaml.v2 (so
// parameters=10 is an integer, force=yes a boolean, and an empty value the empty string), and
// a dotted key makes nested maps (a.b=1 is {"a": {"b": 1}}).
func parseActionArgs(args map[string]string) (map[string]any, error) {
	out := map[string]any{}
	for _, k := range sortedKeys(args) {
		raw := args[k]
		var v any = raw
		if raw != "" {
			var parsed any
			if err := yamlv2.Unmarshal([]byte(raw), &parsed); err != nil {
				return nil, fmt.Errorf("cannot parse value of %q: %w", k, err)
			}
			v = plainYAML(parsed)
		}
		keys := strings.Split(k, ".")
		m := out
		for i, key := range keys {
			if key == "" {
				return nil, fmt.Errorf("invalid parameter key %q", k)
			}
			if i == len(keys)-1 {
				m[key] = v
				break
			}
			next, ok := m[key].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[key] = next
			}
			m = next
		}
	}
	return out, nil
}

// plainYAML converts yaml.v2's map[interface{}]interface{} into map[string]any, recursively.
func plainYAML(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = plainYAML(e)
		}
		return m
	case []any:
		for i := range x {
			x[i] = plainYAML(x[i])
		}
		return x
	}
	return v
}

// validateActionParams checks params against the action's JSON schema as Juju does before
// running it (juju/charm ActionSpec.ValidateParams, with gojsonschema): the keywords type,
// enum, required, additionalProperties, properties, minimum, maximum, minLength and
// maxLength. Errors are sorted and joined as Juju joins them.
func validateActionParams(spec Action, params map[string]any) error {
	var errs []string
	validateObject("(root)", params, spec.Params, spec.Required, spec.AdditionalProperties, &errs)
	if len(errs) == 0 {
		return nil
	}
	sort.Strings(errs)
	return fmt.Errorf("validation failed: %s", strings.Join(errs, "; "))
}

func validateObject(ctx string, obj map[string]any, props map[string]Param, required []string, additional *bool, errs *[]string) {
	for _, r := range required {
		if _, ok := obj[r]; !ok {
			*errs = append(*errs, schemaError(ctx, fmt.Sprintf("%q property is missing and required", r), obj))
		}
	}
	for _, k := range sortedKeys(obj) {
		p, ok := props[k]
		if !ok {
			if additional != nil && !*additional {
				*errs = append(*errs, schemaError(ctx, fmt.Sprintf("additional property %q is not allowed", k), obj))
			}
			continue
		}
		validateValue(ctx+"."+k, obj[k], p, errs)
	}
}

func validateValue(ctx string, v any, p Param, errs *[]string) {
	if p.Type != "" && !hasType(v, p.Type) {
		*errs = append(*errs, schemaError(ctx, "must be of type "+p.Type, v))
		return
	}
	if len(p.Enum) > 0 {
		found := false
		for _, e := range p.Enum {
			if sameJSON(e, v) {
				found = true
			}
		}
		if !found {
			var vals []string
			for _, e := range p.Enum {
				b, _ := json.Marshal(e)
				vals = append(vals, string(b))
			}
			*errs = append(*errs, schemaError(ctx, fmt.Sprintf("must match one of the enum values [%s]", strings.Join(vals, ",")), v))
		}
	}
	if n, ok := number(v); ok {
		if p.Minimum != nil && n < *p.Minimum {
			*errs = append(*errs, schemaError(ctx, fmt.Sprintf("must be greater than or equal to %v", *p.Minimum), v))
		}
		if p.Maximum != nil && n > *p.Maximum {
			*errs = append(*errs, schemaError(ctx, fmt.Sprintf("must be lower than or equal to %v", *p.Maximum), v))
		}
	}
	if s, ok := v.(string); ok {
		n := len([]rune(s))
		if p.MinLength != nil && n < *p.MinLength {
			*errs = append(*errs, schemaError(ctx, fmt.Sprintf("string length must be greater or equal to %d", *p.MinLength), v))
		}
		if p.MaxLength != nil && n > *p.MaxLength {
			*errs = append(*errs, schemaError(ctx, fmt.Sprintf("string length must be lower or equal to %d", *p.MaxLength), v))
		}
	}
	if m, ok := v.(map[string]any); ok && (p.Properties != nil || p.AdditionalProperties != nil || len(p.Required) > 0) {
		validateObject(ctx, m, p.Properties, p.Required, p.AdditionalProperties, errs)
	}
}

func schemaError(ctx, desc string, v any) string {
	given := "null"
	if v != nil {
		if b, err := json.Marshal(v); err == nil {
			given = string(b)
		}
	}
	return fmt.Sprintf("%s : %s, given %s", ctx, desc, given)
}

// hasType reports whether v is of JSON schema type typ (integer: a number with no fraction).
func hasType(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := number(v)
		return ok
	case "integer":
		n, ok := number(v)
		return ok && n == math.Trunc(n)
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "null":
		return v == nil
	}
	return true // unknown types are the schema's problem, reported by the charm check
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
