// Package kvcache is an in-memory key-value cache with expiry.
package kvcache

import (
	"sync"
	"time"

	"example.com/kvcache/keys"
)

type entry struct {
	value   string
	expires time.Time
}

// Store maps keys to string values; an entry expires TTL after it was set (never when TTL is 0).
type Store struct {
	TTL time.Duration
	Now func() time.Time

	mu      sync.Mutex
	entries map[string]entry
}

// NewStore makes an empty store whose entries live for ttl.
func NewStore(ttl time.Duration) *Store {
	return &Store{TTL: ttl, Now: time.Now, entries: make(map[string]entry)}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Set stores value under key, replacing what was there.
func (s *Store) Set(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := entry{value: value}
	if s.TTL > 0 {
		e.expires = s.now().Add(s.TTL)
	}
	s.entries[keys.Normalize(key)] = e
}

// Get returns the value stored under key, or "" when there is none (or it expired).
func (s *Store) Get(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keys.Normalize(key)
	e, ok := s.entries[k]
	if !ok {
		return ""
	}
	if !e.expires.IsZero() && !s.now().Before(e.expires) {
		delete(s.entries, k)
		return ""
	}
	return e.value
}

// Delete removes key.
func (s *Store) Delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, keys.Normalize(key))
}

// Len is the number of entries, expired ones not yet removed included.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
