// Accuracy fixture (C++): namespaces, templates, lambdas, an anonymous namespace,
// virtual methods, at -O2, built by g++ and clang++.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace geometry {

class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
    virtual std::string name() const = 0;
};

class Rectangle : public Shape {
public:
    Rectangle(double w, double h) : w_(w), h_(h) {}
    double area() const override { return w_ * h_; }
    std::string name() const override { return "rectangle"; }

private:
    double w_, h_;
};

class Circle final : public Shape {
public:
    explicit Circle(double r) : r_(r) {}
    double area() const override { return 3.14159265358979 * r_ * r_; }
    std::string name() const override { return "circle"; }

private:
    double r_;
};

namespace stats {

template <typename T>
struct Summary {
    T total{};
    std::size_t count = 0;

    void add(const T &value)
    {
        total += value;
        ++count;
    }
    T mean() const { return count ? total / static_cast<T>(count) : T{}; }
};

template <typename Container, typename Fn>
auto summarize(const Container &items, Fn fn) -> Summary<decltype(fn(*items.begin()))>
{
    Summary<decltype(fn(*items.begin()))> summary;
    for (const auto &item : items)
        summary.add(fn(item));
    return summary;
}

} // namespace stats
} // namespace geometry

namespace {

struct Registry {
    std::map<std::string, int> counts;

    void record(const std::string &key) { ++counts[key]; }
};

__attribute__((noinline)) Registry &registry()
{
    static Registry instance;
    return instance;
}

template <int N>
__attribute__((noinline)) int unrolled_sum(const int (&values)[N])
{
    int sum = 0;
    for (int i = 0; i < N; ++i)
        sum += values[i] * (i + 1);
    return sum;
}

} // namespace

namespace app::detail {

__attribute__((noinline)) std::vector<std::unique_ptr<geometry::Shape>> make_shapes(int n)
{
    std::vector<std::unique_ptr<geometry::Shape>> shapes;
    for (int i = 0; i < n; ++i) {
        if (i % 3 == 0)
            shapes.push_back(std::make_unique<geometry::Circle>(i * 0.5 + 1));
        else
            shapes.push_back(std::make_unique<geometry::Rectangle>(i + 1, i * 2 + 1));
    }
    return shapes;
}

__attribute__((noinline)) double run(int n)
{
    auto shapes = make_shapes(n);
    auto summary = geometry::stats::summarize(shapes, [](const std::unique_ptr<geometry::Shape> &s) {
        registry().record(s->name());
        return s->area();
    });
    std::sort(shapes.begin(), shapes.end(), [](const auto &a, const auto &b) { return a->area() < b->area(); });
    int counts[7] = {1, 2, 3, 4, 5, 6, 7};
    int extra = unrolled_sum(counts);
    std::function<double(double)> scaled = [extra](double x) { return x * extra; };
    return scaled(summary.mean()) + static_cast<double>(registry().counts.size());
}

} // namespace app::detail

int main(int argc, char **)
{
    std::printf("%.3f\n", app::detail::run(10 + argc));
    return 0;
}
