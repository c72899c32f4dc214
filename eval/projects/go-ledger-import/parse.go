// Package ledger imports bank exports and summarises them.
package ledger

import (
	"bufio"
	"io"
	"strings"
	"time"
)

// DateLayout is the export's date format.
const DateLayout = "2006-01-02"

// Transaction is one line of the export.
type Transaction struct {
	Date        time.Time
	Description string
	Cents       int64
}

// ParseTransactions reads an export: a header line, then `date,description,amount` lines.
// Blank lines are skipped. A description may not contain a comma.
func ParseTransactions(r io.Reader) ([]Transaction, error) {
	scanner := bufio.NewScanner(r)
	var txs []Transaction
	line := 0
	for scanner.Scan() {
		line++
		text := strings.TrimSpace(scanner.Text())
		if line == 1 || text == "" {
			continue
		}
		fields := strings.Split(text, ",")
		date, _ := time.Parse(DateLayout, strings.TrimSpace(fields[0]))
		cents, _ := ParseAmount(fields[2])
		txs = append(txs, Transaction{
			Date:        date,
			Description: strings.TrimSpace(fields[1]),
			Cents:       cents,
		})
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	return txs, nil
}
