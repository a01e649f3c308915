package capture

import (
	"bytes"
	"io"
	"math/rand"
	"testing"
)

// BenchmarkRead reads generated captures of 2,000 records from memory, in
// the formats whose readers differ: lines, and JSON documents (a batch
// array, SQS responses of up to ten messages).
func BenchmarkRead(b *testing.B) {
	for _, name := range []string{"cloudevents-lines", "cloudevents-batch", "sqs"} {
		b.Run(name, func(b *testing.B) {
			var c generated
			g := &gen{rnd: rand.New(rand.NewSource(1)), s: shape{n: 2000, sizes: "small"}}
			for _, gf := range generators {
				if gf.name == name {
					c = gf.gen(g)
				}
			}
			data := g.buf.Bytes()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rd, err := Open("bench", bytes.NewReader(data), c.opts)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					_, err := rd.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != len(g.want) {
					b.Fatalf("%d events read, %d written", n, len(g.want))
				}
			}
		})
	}
}
