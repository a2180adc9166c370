// free() of memory malloc never returned, three ways a program gets such a pointer:
//   (no argument)  a name slot that still holds its static default, a string literal;
//   array          a global array handed to a release function;
//   bss            a pointer into a large zero-initialized table (the .bss pages past the file).
// Expected: bad-free, detected in set_name / release_table / drop_entry, and the report says
// what the address is (read-only data, the variable 'names', zero-initialized data).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char names[64];
static char big_table[200000];
static const char *default_name = "anonymous";

static void set_name(char **slot, const char *s) {
  if (*slot) free(*slot);  // BUG (second call): *slot is the static default
  *slot = s ? strdup(s) : (char *)default_name;
}

static void release_table(char *t) { free(t); }  // BUG with "array": a global array
static void drop_entry(char *e) { free(e); }     // BUG with "bss": inside a .bss table

int main(int argc, char **argv) {
  char *name = NULL;
  if (argc > 1 && strcmp(argv[1], "array") == 0) release_table(names);
  if (argc > 1 && strcmp(argv[1], "bss") == 0) drop_entry(big_table + 150000);
  set_name(&name, NULL);
  set_name(&name, "bob");
  puts(name);
  return 0;
}
