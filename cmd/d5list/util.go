package main

import "strconv"

func itoa64(i int64) string { return strconv.FormatInt(i, 10) }
