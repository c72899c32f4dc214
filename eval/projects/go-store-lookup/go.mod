module example.com/kvcache

go 1.19
