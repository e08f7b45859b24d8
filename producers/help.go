package producers

import "fmt"

// The help of the commands that run elves (elves, demo) explains lines and
// the records made wrong on purpose in these words, so that the commands
// say it alike and cannot drift from what the elves do.

// LinesHelp explains packing lines and halls in the help of every command
// that runs elves (elves, demo), so that the commands say it alike.
const LinesHelp = `A record's key is its packing line: its size alone (S, M, L, XL), or with
--halls N its size and hall (M/hall-7), the halls hall-1 … hall-N taken in turn
by each size's records. The packer decides everything (lateness, duplicates,
ranks, windows) per line, and a line's records are all in one partition, so
lines are what partitions and packer instances share: with sizes alone at most
4 partitions carry work, with N halls up to 4N. Use halls when more than four
packer instances should work: give the topics more --partitions and enough
halls to fill them, at least 4*halls >= partitions, better about as many halls
as partitions, since lines hash to partitions unevenly. Toys and boxes need the
same --halls: a toy is packed only into a box of its own line.`

// WrongRecordsHelp says which records the elves make wrong on purpose, for
// the help of the commands that run them (elves, demo).
const WrongRecordsHelp = `Some records are made wrong on purpose. Each record is drawn late with
probability --late-rate: made --lateness + 2*--window or more before what the
same elf last wrote for that size (record or heartbeat), and on that line. A
late draw for a size the elf has not written anything for yet makes an
ordinary record instead, so on average fewer than --late-rate of the records
are late, most visibly in short runs with many elves; the summary counts the
late records actually made.
Likewise --dup-rate draws repeat an earlier toy or box of the same elf and size
byte for byte (an ordinary record when there is none yet): a duplicate, its id
again in the same window, unless that window has closed by then, which makes
it late instead. --bad-rate draws are dead letters, cycling through truncated
JSON, a JSON array, invalid UTF-8, a bad made_at, a bad size, a size that
differs from the key, a missing id and an empty id, and with --halls a key that
is no well-formed line (M/Hall-1, M/, M/hall-1/b, a hall of 33 characters, …).`

// HeartbeatsHelp says what heartbeats the elves send and what closes a
// quiet line's windows, for the help of the commands that run them.
const HeartbeatsHelp = `Heartbeats keep event time moving. Every --heartbeat of event time an elf sends
one heartbeat on each line that had a toy or box since the last such tick, and
one on each line that went quiet, when event time has passed the end of the
window of its newest item plus --lateness: that one closes the quiet line's
windows on this stream's side. A line without items gets none, so heartbeats
grow with the records, at most two per toy or box, however many halls there
are. When the elves stop, a final heartbeat on every line of each topic, made
at the end of the last window written plus --lateness, closes every window.
A window closes once both streams' heartbeats (or records) on its line have
passed it: a line on which only one stream made items keeps its windows open
until the final heartbeats.`

// HallsHelp is the usage of a --halls flag.
var HallsHelp = fmt.Sprintf("spread the records over this many halls: keys SIZE/hall-K, 4*halls packing lines, so that up to 4*halls partitions carry work; 0 = keys are sizes alone (at most %d; toys and boxes need the same)", MaxHalls)
