// Mach-O accuracy fixture (C++ without a standard library, which Linux lacks for Apple
// targets): namespaces, a template, virtual methods, a lambda, an anonymous namespace.
#define NOINLINE __attribute__((noinline))

namespace geometry {

class Shape {
public:
    virtual ~Shape() {}
    virtual double area() const = 0;
};

class Rectangle : public Shape {
public:
    Rectangle(double w, double h) : w_(w), h_(h) {}
    double area() const override { return w_ * h_; }

private:
    double w_, h_;
};

class Circle : public Shape {
public:
    explicit Circle(double r) : r_(r) {}
    double area() const override { return 3.14159265358979 * r_ * r_; }

private:
    double r_;
};

template <typename T, int N>
struct FixedList {
    T items[N];
    int count = 0;
    void push(T value) { if (count < N) items[count++] = value; }
    template <typename F>
    T fold(T start, F step) const {
        for (int i = 0; i < count; i++) start = step(start, items[i]);
        return start;
    }
};

}  // namespace geometry

namespace {

NOINLINE double total_area(geometry::Shape *const *shapes, int n)
{
    geometry::FixedList<double, 8> areas;
    for (int i = 0; i < n; i++) areas.push(shapes[i]->area());
    return areas.fold(0.0, [](double a, double b) { return a + b * 1.5; });
}

}  // namespace

extern "C" NOINLINE int geometry_run(int seed)
{
    geometry::Rectangle r(seed + 1.0, 2.5);
    geometry::Circle c(seed * 0.5);
    geometry::Shape *shapes[] = {&r, &c, &r};
    return (int)total_area(shapes, 3);
}
