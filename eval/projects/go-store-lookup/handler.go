package kvcache

import (
	"io"
	"net/http"
	"strings"
)

// MaxValueBytes is the largest value a PUT may store.
const MaxValueBytes = 1 << 20

// Handler serves GET and PUT on /kv/{key}.
func Handler(s *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/kv/")
		if key == "" || key == r.URL.Path {
			http.NotFound(w, r)
			return
		}
		switch r.Method {
		case http.MethodGet:
			v := s.Get(key)
			if v == "" {
				http.Error(w, "no such key", http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, v)
		case http.MethodPut:
			body, err := io.ReadAll(io.LimitReader(r.Body, MaxValueBytes+1))
			if err != nil || len(body) > MaxValueBytes {
				http.Error(w, "value too large", http.StatusRequestEntityTooLarge)
				return
			}
			s.Set(key, string(body))
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Allow", "GET, PUT")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}
