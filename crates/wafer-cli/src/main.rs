fn main() {
    println!("wafer: under construction");
}
