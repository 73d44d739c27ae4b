import Foundation

/// The cookie date parser of RFC 6265 section 5.1.1: the lenient algorithm browsers use for `Expires`, which reads
/// `Wed, 21 Oct 2015 07:28:00 GMT`, `Wednesday, 21-Oct-15 07:28:00 GMT`, `Wed Oct 21 07:28:00 2015` and the other
/// spellings servers send, and refuses impossible dates.
///
/// Every date is read as UTC, whatever zone it names, as the RFC says.
enum CookieDate {
    /// The date `text` names, or nil if it is not a cookie date.
    static func parse(_ text: Substring) -> Date? {
        var time: (hour: Int, minute: Int, second: Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        for token in text.utf8.split(whereSeparator: Self.isDelimiter) {
            if time == nil, let parsed = Self.time(token) {
                time = parsed
            } else if day == nil, let parsed = Self.number(token, digits: 1...2) {
                day = parsed
            } else if month == nil, let parsed = Self.month(token) {
                month = parsed
            } else if year == nil, let parsed = Self.number(token, digits: 2...4) {
                year = parsed
            }
        }
        guard let time, let day, let month, var year else { return nil }
        if (70...99).contains(year) {
            year += 1900
        } else if (0...69).contains(year) {
            year += 2000
        }
        guard (1...31).contains(day), year >= 1601, time.hour <= 23, time.minute <= 59, time.second <= 59,
            day <= Self.daysInMonth(month, year: year)
        else {
            return nil
        }
        let days = Self.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + time.hour * 3_600 + time.minute * 60 + time.second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// `delimiter` of the RFC: tab, and the visible ASCII that is not a digit, letter or `:`.
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x09, 0x20...0x2F, 0x3B...0x40, 0x5B...0x60, 0x7B...0x7E: return true
        default: return false
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// A run of `digits` digits at the start of `token`, followed by nothing or by a non-digit and anything.
    private static func number(_ token: Substring.UTF8View.SubSequence, digits: ClosedRange<Int>) -> Int? {
        let run = token.prefix(while: Self.isDigit)
        guard digits.contains(run.count) else { return nil }
        return run.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// `hms-time`: three runs of one or two digits joined by `:`, optionally followed by a non-digit and anything.
    private static func time(_ token: Substring.UTF8View.SubSequence) -> (hour: Int, minute: Int, second: Int)? {
        var values: [Int] = []
        var rest = token[...]
        for index in 0..<3 {
            let run = rest.prefix(while: Self.isDigit)
            guard (1...2).contains(run.count) else { return nil }
            values.append(run.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) })
            rest = rest[run.endIndex...]
            if index < 2 {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                rest = rest.dropFirst()
            }
        }
        if let next = rest.first, Self.isDigit(next) { return nil }
        return (values[0], values[1], values[2])
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// `month`: a token whose first three letters name a month, case-insensitively.
    private static func month(_ token: Substring.UTF8View.SubSequence) -> Int? {
        guard token.count >= 3 else { return nil }
        let prefix = String(decoding: token.prefix(3), as: UTF8.self).lowercased()
        return Self.months.firstIndex(of: prefix).map { $0 + 1 }
    }

    private static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
