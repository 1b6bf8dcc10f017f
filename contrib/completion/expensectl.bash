# bash completion for expensectl                          -*- shell-script -*-

# The expense ids the daemon has, newest first and at most 200: one bounded
# query over its listing index, with the --socket, --account or
# --all-accounts already on the line (ids of the account being acted on).
_expensectl_ids()
{
    local i scope=()
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --socket|--account) scope+=("${words[i]}" "${words[i + 1]}"); ((i++)) ;;
            --all-accounts) scope+=(--all-accounts) ;;
        esac
    done
    "${words[0]}" "${scope[@]}" list --ids --sort added --reverse --limit 200 2>/dev/null
}

_expensectl()
{
    local cur prev words cword
    _init_completion || return

    local subcommands="add list show retry discard status watch sync stats edit receipt delete resolve read help"
    local global="--socket --json --account --all-accounts --help --version"
    local fields="--merchant --amount --currency --date --category --comment --tax-tag"

    case $prev in
        --socket|--receipt|-o|--output)
            _filedir
            return ;;
        --take)
            COMPREPLY=($(compgen -W "server mine" -- "$cur"))
            return ;;
        --currency)
            COMPREPLY=($(compgen -W "EUR USD GBP CHF JPY CAD AUD SEK NOK DKK PLN CZK" -- "$cur"))
            return ;;
        --account)
            COMPREPLY=($(compgen -u -- "$cur"))
            return ;;
        --state)
            COMPREPLY=($(compgen -W "queued sending synced needs-attention conflict deleting" -- "$cur"))
            return ;;
        --sort)
            COMPREPLY=($(compgen -W "date amount merchant added" -- "$cur"))
            return ;;
        --merchant|--amount|--date|--category|--comment|--tax-tag|--client-id|--timeout|--since|--until|--limit|--offset)
            return ;;
    esac

    local subcommand="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --socket|--account) ((i++)) ;;
            -*) ;;
            *) subcommand=${words[i]}; break ;;
        esac
    done

    local options=""
    case $subcommand in
        "") COMPREPLY=($(compgen -W "$subcommands $global" -- "$cur")); return ;;
        add) options="$fields --receipt --client-id" ;;
        edit) options="$fields --receipt" ;;
        receipt) options="-o --output --open --original" ;;
        list) options="--state --incomplete --since --until --merchant --category --sort --reverse --limit --offset --totals --ids" ;;
        sync) options="--refresh --now --wait --timeout" ;;
        watch) options="--summary" ;;
        resolve) options="--take" ;;
        delete) options="--yes" ;;
        discard) options="--yes" ;;
        help) COMPREPLY=($(compgen -W "$subcommands" -- "$cur")); return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$options --json --socket --account --all-accounts --help" -- "$cur"))
        return
    fi
    case $subcommand in
        show|retry|discard|delete|edit|resolve|read)
            COMPREPLY=($(compgen -W "$(_expensectl_ids)" -- "$cur")) ;;
        receipt)
            case ${words[cword-1]} in
                -o|--output) COMPREPLY=($(compgen -f -- "$cur")) ;;
                *) COMPREPLY=($(compgen -W "$(_expensectl_ids)" -- "$cur")) ;;
            esac ;;
    esac
} &&
    complete -F _expensectl expensectl
