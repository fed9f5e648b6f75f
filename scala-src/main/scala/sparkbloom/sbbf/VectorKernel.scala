package sparkbloom.sbbf

import jdk.incubator.vector.{IntVector, VectorOperators, VectorSpecies}

/**
 * The SBBF kernel on the JDK Vector API: one block is one 256-bit vector of eight int lanes, so
 * `mask = 1 << ((broadcast(key) * salts) >>> 27)` is three vector instructions, insert is an OR and check
 * is an AND-compare. Loaded only through [[Kernel.vector]], which verifies it against [[ScalarKernel]].
 */
object VectorKernel extends Kernel {
  private val Species: VectorSpecies[Integer] = IntVector.SPECIES_256
  private val Salts: IntVector = IntVector.fromArray(Species, Kernel.Salt, 0)
  private val Ones: IntVector = IntVector.broadcast(Species, 1)
  require(Species.length() == 8)

  def name = "vector"

  @inline private def mask(hash: Long): IntVector =
    Ones.lanewise(VectorOperators.LSHL,
      IntVector.broadcast(Species, hash.toInt).mul(Salts).lanewise(VectorOperators.LSHR, 27))

  @inline def insert(words: Array[Int], numBlocks: Int, hash: Long): Unit = {
    val base = Kernel.blockIndex(hash, numBlocks) << 3
    IntVector.fromArray(Species, words, base).or(mask(hash)).intoArray(words, base)
  }

  @inline def check(words: Array[Int], numBlocks: Int, hash: Long): Boolean = {
    val base = Kernel.blockIndex(hash, numBlocks) << 3
    val m = mask(hash)
    IntVector.fromArray(Species, words, base).and(m).eq(m).allTrue()
  }

  def insertAll(words: Array[Int], numBlocks: Int, hashes: Array[Long], from: Int, until: Int): Unit = {
    var i = from
    while (i < until) { insert(words, numBlocks, hashes(i)); i += 1 }
  }

  def checkAll(words: Array[Int], numBlocks: Int, hashes: Array[Long], from: Int, until: Int, out: Array[Boolean])
      : Unit = {
    var i = from
    while (i < until) { out(i) = check(words, numBlocks, hashes(i)); i += 1 }
  }

  def checkAny(words: Array[Int], numBlocks: Int, hashes: Array[Long]): Boolean = {
    var i = 0; var any = false
    while (i < hashes.length && !any) { any = check(words, numBlocks, hashes(i)); i += 1 }
    any
  }
}
