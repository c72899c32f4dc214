package kvcache

import "sync"

// Cache is a Store that fills itself: on a miss, Load is called and its value stored.
type Cache struct {
	Store *Store
	Load  func(key string) (string, error)

	mu sync.Mutex // serialises loads so a key is loaded once at a time
}

// GetOrLoad returns the cached value of key, loading and storing it on a miss.
func (c *Cache) GetOrLoad(key string) (string, error) {
	if v := c.Store.Get(key); v != "" {
		return v, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := c.Store.Get(key); v != "" {
		return v, nil
	}
	v, err := c.Load(key)
	if err != nil {
		return "", err
	}
	c.Store.Set(key, v)
	return v, nil
}
