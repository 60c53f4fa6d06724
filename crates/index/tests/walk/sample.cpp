// Sample C++ for the table walk test: every pattern of queries/cpp.scm, and near misses.
#pragma once
#include <vector>
#define LIMIT 8
#define TWICE(x) ((x) + (x))

namespace geo {
namespace detail { int helper(int); }

class Shape;
struct Tag;
class Shape {
 public:
  virtual double area() const = 0;
  virtual ~Shape() = default;
  int id() const { return id_; }
  static Shape *make(int kind);
  Shape &operator=(const Shape &) = delete;

 private:
  int id_;
};

template <typename T>
struct Box : public Shape {
  T value;
  double area() const override { return static_cast<double>(value); }
  Box &self() { return *this; }
};

union Bits { int i; float f; };
enum class Color { Red, Green };
enum Legacy { A, B };
typedef std::vector<int> ints_t;
using Real = double;
using std::vector;

double square(double x);
double square(double x) { return x * x; }
int &counter() { static int c; return c; }
const char *name() { return "square(2)"; }

double Shape::area() const { return 0.0; }
Shape *Shape::make(int kind) { return new Box<int>(); }

}  // namespace geo

int main() {
  geo::Box<int> b;
  auto s = geo::Shape::make(1);
  std::vector<geo::Shape *> v;
  v.push_back(s);
  b.self().area();
  geo::square(TWICE(2.0));
  square(1.0);
  [](int x) { return x; }(3);
  return static_cast<int>(s->area());
}
