// Package keys normalises cache keys.
package keys

import "strings"

// Normalize trims surrounding space and slashes and lower-cases the key, so
// "/Products/42 " and "products/42" are the same entry.
func Normalize(key string) string {
	return strings.ToLower(strings.Trim(key, " \t/"))
}
