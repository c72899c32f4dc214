package ledger

import "sort"

// Summary totals a list of transactions.
type Summary struct {
	Count   int
	In, Out int64 // cents; Out is negative or zero
	Net     int64
	// Largest is the description of the largest outgoing transaction ("" when none).
	Largest string
}

// Summarize totals txs.
func Summarize(txs []Transaction) Summary {
	var s Summary
	var largest int64
	for _, tx := range txs {
		s.Count++
		if tx.Cents >= 0 {
			s.In += tx.Cents
		} else {
			s.Out += tx.Cents
			if tx.Cents < largest {
				largest, s.Largest = tx.Cents, tx.Description
			}
		}
	}
	s.Net = s.In + s.Out
	return s
}

// ByDay groups transactions by date (YYYY-MM-DD), days in order.
func ByDay(txs []Transaction) ([]string, map[string][]Transaction) {
	days := map[string][]Transaction{}
	for _, tx := range txs {
		key := tx.Date.Format(DateLayout)
		days[key] = append(days[key], tx)
	}
	keys := make([]string, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, days
}
