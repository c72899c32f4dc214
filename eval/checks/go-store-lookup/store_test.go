package kvcache

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestSetAndGet(t *testing.T) {
	s := NewStore(0)
	s.Set("Products/42", "mug")
	if got, ok := s.Get("products/42"); !ok || got != "mug" {
		t.Fatalf("Get = %q, %v", got, ok)
	}
	if got, ok := s.Get("products/43"); ok || got != "" {
		t.Fatalf("missing key: Get = %q, %v", got, ok)
	}
}

func TestGetTellsEmptyFromMissing(t *testing.T) {
	s := NewStore(0)
	s.Set("flags/beta", "")
	if v, ok := s.Get("flags/beta"); !ok || v != "" {
		t.Fatalf("empty value: Get = %q, %v", v, ok)
	}
	if _, ok := s.Get("flags/gamma"); ok {
		t.Fatal("missing key reported present")
	}
}

func TestEntriesExpire(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	s := NewStore(time.Minute)
	s.Now = clock.now
	s.Set("a", "1")
	clock.t = clock.t.Add(59 * time.Second)
	if got, ok := s.Get("a"); !ok || got != "1" {
		t.Fatalf("before expiry: %q, %v", got, ok)
	}
	clock.t = clock.t.Add(time.Second)
	if _, ok := s.Get("a"); ok {
		t.Fatal("after expiry: still present")
	}
	if s.Len() != 0 {
		t.Fatalf("expired entry kept")
	}
}

func TestDelete(t *testing.T) {
	s := NewStore(0)
	s.Set("a", "1")
	s.Delete("A")
	if _, ok := s.Get("a"); ok || s.Len() != 0 {
		t.Fatal("not deleted")
	}
}

func TestGetOrLoadLoadsOnce(t *testing.T) {
	loads := 0
	c := &Cache{Store: NewStore(0), Load: func(key string) (string, error) {
		loads++
		return "v:" + key, nil
	}}
	for i := 0; i < 3; i++ {
		if v, err := c.GetOrLoad("k"); err != nil || v != "v:k" {
			t.Fatalf("GetOrLoad = %q, %v", v, err)
		}
	}
	if loads != 1 {
		t.Fatalf("loaded %d times", loads)
	}
}

func TestGetOrLoadCachesEmptyValues(t *testing.T) {
	loads := 0
	c := &Cache{Store: NewStore(0), Load: func(string) (string, error) {
		loads++
		return "", nil
	}}
	for i := 0; i < 3; i++ {
		if v, err := c.GetOrLoad("flags/beta"); err != nil || v != "" {
			t.Fatalf("GetOrLoad = %q, %v", v, err)
		}
	}
	if loads != 1 {
		t.Fatalf("an empty value was loaded %d times", loads)
	}
}

func TestGetOrLoadError(t *testing.T) {
	boom := errors.New("backend down")
	c := &Cache{Store: NewStore(0), Load: func(string) (string, error) { return "", boom }}
	if _, err := c.GetOrLoad("k"); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

func TestHandlerPutThenGet(t *testing.T) {
	h := Handler(NewStore(0))
	put := httptest.NewRecorder()
	h.ServeHTTP(put, httptest.NewRequest(http.MethodPut, "/kv/greeting", strings.NewReader("hello")))
	if put.Code != http.StatusNoContent {
		t.Fatalf("PUT: %d", put.Code)
	}
	get := httptest.NewRecorder()
	h.ServeHTTP(get, httptest.NewRequest(http.MethodGet, "/kv/greeting", nil))
	if get.Code != http.StatusOK || get.Body.String() != "hello" {
		t.Fatalf("GET: %d %q", get.Code, get.Body.String())
	}
	missing := httptest.NewRecorder()
	h.ServeHTTP(missing, httptest.NewRequest(http.MethodGet, "/kv/other", nil))
	if missing.Code != http.StatusNotFound {
		t.Fatalf("GET missing: %d", missing.Code)
	}
}

func TestHandlerServesEmptyValue(t *testing.T) {
	s := NewStore(0)
	s.Set("flags/beta", "")
	rec := httptest.NewRecorder()
	Handler(s).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/kv/flags/beta", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("GET empty value: %d %q", rec.Code, rec.Body.String())
	}
}
