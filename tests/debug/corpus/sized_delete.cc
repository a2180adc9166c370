// Expected: new-delete-type-mismatch (sized delete with size 4 for a 44-byte block), allocated
// in make_shape: a Derived deleted through a Base pointer without a virtual destructor.
struct Shape { int kind; };
struct Polygon : Shape { int points[10]; };

static Shape *make_shape() { return new Polygon(); }

int main() {
  Shape *s = make_shape();
  delete s;  // BUG: Shape has no virtual destructor; sized delete passes sizeof(Shape)
  return 0;
}
