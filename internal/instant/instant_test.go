package instant_test

import (
	"fmt"
	"time"

	"github.com/chronoshq/chronos/internal/instant"
)

func Example() {
	noon := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	later := noon.Add(90 * time.Minute)
	fmt.Println(instant.Earlier(noon, later).Format(time.Kitchen), instant.Earlier(later, noon).Format(time.Kitchen))
	fmt.Println(instant.Later(noon, later).Format(time.Kitchen), instant.Later(later, noon).Format(time.Kitchen))
	// Output:
	// 12:00PM 12:00PM
	// 1:30PM 1:30PM
}
