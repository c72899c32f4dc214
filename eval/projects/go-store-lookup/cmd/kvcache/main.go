// Command kvcache serves a Store over HTTP; with -get it prints one key of a running server's
// preloaded file instead.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"example.com/kvcache"
)

func main() {
	addr := flag.String("addr", ":8090", "listen address")
	ttl := flag.Duration("ttl", 10*time.Minute, "entry lifetime")
	preload := flag.String("preload", "", "file of key=value lines to load at start")
	get := flag.String("get", "", "print this key of the preloaded file and exit")
	flag.Parse()

	store := kvcache.NewStore(*ttl)
	if *preload != "" {
		if err := load(store, *preload); err != nil {
			log.Fatal(err)
		}
	}
	if *get != "" {
		v := store.Get(*get)
		if v == "" {
			fmt.Fprintf(os.Stderr, "kvcache: no key %q\n", *get)
			os.Exit(1)
		}
		fmt.Println(v)
		return
	}
	log.Printf("kvcache: %d entries, listening on %s", store.Len(), *addr)
	log.Fatal(http.ListenAndServe(*addr, kvcache.Handler(store)))
}

func load(store *kvcache.Store, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if key, value, ok := strings.Cut(scanner.Text(), "="); ok {
			store.Set(key, value)
		}
	}
	return scanner.Err()
}
