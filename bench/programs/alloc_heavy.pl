#!/usr/bin/perl
# An allocation-heavy Perl program for mtheap-bench: each round builds a hash of records
# (arrays, nested hashes, strings of varying length), sorts and joins them, deletes half and
# rebuilds them, then drops the whole structure.  Debian's perl allocates with the system
# malloc, so the preloaded allocator serves every scalar, array and hash.  Everything built is
# checked against values computed without the structures; FAIL and exit 3 on a mismatch.
use strict;
use warnings;
use Time::HiRes qw(time);

my $scale = 3;
if (@ARGV == 2 && $ARGV[0] eq '--scale' && $ARGV[1] =~ /^[1-9][0-9]*$/) { $scale = $ARGV[1]; }
elsif (@ARGV) { print STDERR "usage: alloc_heavy.pl [--scale N]\n"; exit 2; }

sub fail { print "FAIL workload=perl reason=selfcheck $_[0]\n"; exit 3; }

my $n = 60000;
my $t0 = time;
my $entries = 0;
for my $round (1 .. $scale) {
    my %h;
    for my $i (1 .. $n) {
        $h{"k$i"} = { id => $i, name => "n$i" x (1 + $i % 7), tags => [ $i % 13, "t$round", $i * 3 ] };
    }
    # sums computed from the structure, checked against the arithmetic
    my ($ids, $len, $tag) = (0, 0, 0);
    for my $v (values %h) {
        $ids += $v->{id};
        $len += length $v->{name};
        $tag += $v->{tags}[2];
    }
    my $want_len = 0;
    $want_len += length("n$_") * (1 + $_ % 7) for 1 .. $n;
    fail("ids $ids") unless $ids == $n * ($n + 1) / 2;
    fail("tags $tag") unless $tag == 3 * $n * ($n + 1) / 2;
    fail("names $len, expected $want_len") unless $len == $want_len;
    my @sorted = sort { $h{$a}{id} <=> $h{$b}{id} } keys %h;
    fail("sort") unless $sorted[0] eq 'k1' && $sorted[-1] eq "k$n";
    my $joined = join ",", map { $h{$_}{tags}[0] } @sorted[0 .. 999];
    fail("join") unless length($joined) > 1000;
    # delete every other record and build it again with a longer name
    for my $i (grep { $_ % 2 } 1 .. $n) {
        delete $h{"k$i"};
    }
    fail("delete") unless keys(%h) == int($n / 2);
    for my $i (grep { $_ % 2 } 1 .. $n) {
        $h{"k$i"} = { id => $i, name => "r$i" x 9, tags => [ $i ] };
    }
    for my $i (1 .. $n) {
        my $v = $h{"k$i"} or fail("k$i missing");
        fail("k$i holds id $v->{id}") unless $v->{id} == $i;
        fail("k$i name") unless $i % 2 ? $v->{name} eq "r$i" x 9 : $v->{name} eq "n$i" x (1 + $i % 7);
    }
    $entries = keys %h;
}
my $dt = time - $t0;
printf "RESULT workload=perl threads=1 metric=time value=%.6f unit=s better=lower entries=%d\n", $dt, $entries;
