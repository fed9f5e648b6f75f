package sparkbloom.index

import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.index.sliced.{Layout, LayoutCodec, PathStore}

/** The compact path store of a layout: every stored path found, nothing else, whatever the characters. */
class PathStoreSuite extends AnyFunSuite {
  private val paths = Array(
    "file:/data/t/part-00000-a.parquet", "file:/data/t/part-00001-b.parquet", "file:/data/t/x=1/part-0.parquet",
    "file:/data/t/x=\u00e9t\u00e9/part-0.parquet", "file:/data/t/x=\u65e5\u672c/part-1.parquet",
    "file:/data/t/part-00000-a.parquet.bak", "file:/data/t/p")

  test("finds every stored path by its exact string and gives it back") {
    val s = PathStore(paths)
    assert(s.prefix == "file:/data/t/")
    paths.indices.foreach { i => assert(s.get(paths(i)) == i, paths(i)); assert(s(i) == paths(i)) }
    assert(s.toSeq == paths.toSeq)
  }

  test("never finds a path it does not hold, however close") {
    val s = PathStore(paths)
    Seq("file:/data/t/part-00000-a.parque", "file:/data/t/part-00000-a.parquet2", "file:/data/u/part-00000-a.parquet",
      "file:/data/t/", "", "file:/data/t/x=\u00e9t\u00e8/part-0.parquet", "file:/data/t/P", "hdfs:/data/t/p")
      .foreach(p => assert(s.get(p) == -1, p))
  }

  test("a prefix never ends inside a multi-byte character; one path, no path") {
    val s = PathStore(Array("/d/\u00e9a", "/d/\u00e9b", "/d/\u00e8c"))
    assert(s.prefix == "/d/")
    Seq("/d/\u00e9a", "/d/\u00e9b", "/d/\u00e8c").zipWithIndex.foreach { case (p, i) => assert(s.get(p) == i) }
    val one = PathStore(Array("/only"))
    assert(one.get("/only") == 0 && one.get("/only2") == -1 && one.get("/onl") == -1)
    val none = PathStore(Array.empty[String])
    assert(none.isEmpty && none.get("/x") == -1)
  }

  test("many paths: all found after a layout round trip, none of the absent ones") {
    val many = (0 until 50000).map(i =>
      f"s3a://bucket/warehouse/db/t/part-$i%05d-${i * 7919 % 10007}%05d.parquet").toArray.sorted
    val s = PathStore(many)
    many.indices.foreach(i => assert(s.get(many(i)) == i))
    (0 until 1000).foreach(i => assert(s.get(f"s3a://bucket/warehouse/db/t/part-$i%05d-99999.parquet") == -1))
    val empty = Layout.empty(Seq("c"))
    assert(LayoutCodec.decode(LayoutCodec.encode(empty)).paths.isEmpty)
  }
}
