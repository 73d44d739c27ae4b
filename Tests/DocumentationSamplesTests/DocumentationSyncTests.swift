import Foundation
import Testing

/// Keeps the documentation's code honest: every ```swift block of README.md and of the documentation catalogs
/// (Sources/*/*.docc) must be, character for character, a region of a sample in this folder, between a
/// `// docs:begin NAME` line and a `// docs:end` line. The samples are compiled with the tests (and some run, see
/// `SampleRunTests`), so a block edited without its sample, or a sample that stops compiling, fails CI.
///
/// A block's leading `import` lines are not part of the region: the sample file must import the same modules. The
/// package manifest blocks of the articles are regions of Manifests/ExampleApp/Package.swift, which
/// `ManifestSampleTests` has SwiftPM load.
@Suite("Documentation code blocks are compiled samples")
struct DocumentationSyncTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let samplesFolder = Self.root.appendingPathComponent("Tests/DocumentationSamplesTests")
    /// Where samples are: this target, and the targets that can compile what this one cannot link (a generated
    /// OpenAPI client, swift-service-lifecycle).
    static let sampleFolders = [
        Self.samplesFolder,
        Self.root.appendingPathComponent("Tests/BulwarkOpenAPITransportTests/Samples"),
        Self.root.appendingPathComponent("Tests/BulwarkServiceLifecycleTests/Samples"),
    ]

    /// A region of a sample file.
    struct Region {
        var name: String
        var file: String
        var line: Int
        var text: String
        var imports: Set<String>
    }

    /// A fenced Swift block of a Markdown file.
    struct Block {
        var file: String
        var line: Int
        var text: String
        var imports: [String]
    }

    /// Every `// docs:begin NAME` … `// docs:end` region of the sample files, de-indented.
    static func regions() throws -> [Region] {
        var regions: [Region] = []
        for path in try Self.sampleFolders.flatMap({ try Self.files(under: $0, extension: "swift") }) {
            let lines = try String(contentsOf: path, encoding: .utf8).components(separatedBy: "\n")
            let imports = Set(lines.compactMap(Self.importedModule))
            var open: (name: String, line: Int, body: [String])?
            for (index, line) in lines.enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix("// docs:begin ") {
                    #expect(open == nil, "\(Self.relative(path)):\(index + 1): a region begins inside another")
                    open = (String(trimmed.dropFirst("// docs:begin ".count)), index + 1, [])
                } else if trimmed == "// docs:end" {
                    guard let region = open else {
                        Issue.record("\(Self.relative(path)):\(index + 1): `// docs:end` without a region")
                        continue
                    }
                    regions.append(
                        Region(
                            name: region.name,
                            file: Self.relative(path),
                            line: region.line,
                            text: Self.dedented(region.body),
                            imports: imports
                        )
                    )
                    open = nil
                } else if open != nil {
                    open!.body.append(line)
                }
            }
            #expect(open == nil, "\(Self.relative(path)): region \(open?.name ?? "") is not closed")
        }
        return regions
    }

    /// Every ```swift block of README.md and of the .docc catalogs.
    static func blocks() throws -> [Block] {
        var documents = [Self.root.appendingPathComponent("README.md")]
        let sources = Self.root.appendingPathComponent("Sources")
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted() {
            let folder = sources.appendingPathComponent(module)
            for entry in try FileManager.default.contentsOfDirectory(atPath: folder.path) where entry.hasSuffix(".docc")
            {
                documents += try Self.files(under: folder.appendingPathComponent(entry), extension: "md")
            }
        }
        var blocks: [Block] = []
        for document in documents {
            let lines = try String(contentsOf: document, encoding: .utf8).components(separatedBy: "\n")
            var index = 0
            while index < lines.count {
                let fence = lines[index].trimmingCharacters(in: .whitespaces)
                guard fence.hasPrefix("```") else {
                    index += 1
                    continue
                }
                let start = index
                var body: [String] = []
                index += 1
                while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces) != "```" {
                    body.append(lines[index])
                    index += 1
                }
                index += 1
                guard fence == "```swift" else { continue }
                var imports: [String] = []
                while let first = body.first, let module = Self.importedModule(first) {
                    imports.append(module)
                    body.removeFirst()
                    while body.first?.trimmingCharacters(in: .whitespaces).isEmpty == true { body.removeFirst() }
                }
                blocks.append(
                    Block(file: Self.relative(document), line: start + 1, text: Self.dedented(body), imports: imports)
                )
            }
        }
        return blocks
    }

    @Test func everySwiftBlockIsASampleRegion() throws {
        let regions = try Self.regions()
        let blocks = try Self.blocks()
        #expect(blocks.count >= 40, "found only \(blocks.count) Swift blocks: is the search broken?")
        for block in blocks {
            guard let region = regions.first(where: { $0.text == block.text }) else {
                Issue.record(Comment(rawValue: Self.mismatch(block, regions)))
                continue
            }
            for module in block.imports where !region.imports.contains(module) {
                Issue.record("\(block.file):\(block.line): imports \(module), which \(region.file) does not")
            }
        }
    }

    @Test func everyRegionIsShownSomewhere() throws {
        let blocks = Set(try Self.blocks().map(\.text))
        var names = Set<String>()
        for region in try Self.regions() {
            #expect(names.insert(region.name).inserted, "\(region.file):\(region.line): \(region.name) is taken")
            #expect(
                blocks.contains(region.text),
                "\(region.file):\(region.line): region \(region.name) is in no README or article block"
            )
        }
    }

    /// Why `block` matches no region: the regions that begin like it, each with the first line that differs.
    static func mismatch(_ block: Block, _ regions: [Region]) -> String {
        let lines = block.text.components(separatedBy: "\n")
        var text = "\(block.file):\(block.line): this Swift block is no sample's region"
        for region in regions where region.text.components(separatedBy: "\n").first == lines.first {
            let other = region.text.components(separatedBy: "\n")
            let common = min(lines.count, other.count)
            let index = (0..<common).first { lines[$0] != other[$0] } ?? common
            let shown = index < lines.count ? lines[index] : "(the block ends)"
            let expected = index < other.count ? other[index] : "(the region ends)"
            text += "; it begins like \(region.name) (\(region.file):\(region.line)) but its line \(index + 1) is "
            text += "`\(shown)` where the region has `\(expected)`"
        }
        return text + ". Edit the sample in Tests/DocumentationSamplesTests and copy its region here."
    }

    // MARK: - Text

    static func importedModule(_ line: String) -> String? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("import ") else { return nil }
        return String(trimmed.dropFirst("import ".count)).trimmingCharacters(in: .whitespaces)
    }

    /// The lines without their common leading spaces and without trailing blank lines.
    static func dedented(_ lines: [String]) -> String {
        var lines = lines
        while lines.last?.trimmingCharacters(in: .whitespaces).isEmpty == true { lines.removeLast() }
        let indent =
            lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            .map { $0.prefix(while: { $0 == " " }).count }.min() ?? 0
        return lines.map { $0.count >= indent ? String($0.dropFirst(indent)) : "" }.joined(separator: "\n")
    }

    static func files(under folder: URL, extension suffix: String) throws -> [URL] {
        guard let enumerator = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        return enumerator.compactMap { $0 as? String }.filter { $0.hasSuffix("." + suffix) }.sorted()
            .map { folder.appendingPathComponent($0) }
    }

    static func relative(_ url: URL) -> String {
        String(url.standardizedFileURL.path.dropFirst(Self.root.standardizedFileURL.path.count + 1))
    }
}
